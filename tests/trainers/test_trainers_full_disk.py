"""The trainers' writers on a real full or read-only tmpfs (tests/helpers/small_fs.py,
issue 37 item 6): an artifact a library (safetensors) cannot write, the metrics log, one
DataError line naming the path and the OS reason; the previous artifact and the log's
earlier lines are kept, and the same save goes through once there is room."""

from __future__ import annotations

import json

import pytest
from small_fs import REASON, kept, small_fs, snapshot

from cppo_bench.errors import DataError

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")


@pytest.mark.parametrize("state", ("full", "read-only"))
def test_an_artifact_the_disk_refuses_keeps_the_previous_one(tmp_path, state) -> None:
    from trainers.engine import artifacts

    with small_fs(tmp_path / "fs", size="1m") as fs:
        dest = fs.root / "checkpoints" / "final"
        with artifacts.saving(dest, "policy") as tmp:
            artifacts.save_tensors(tmp / "w.safetensors", {"w": torch.zeros(4)})
        before = snapshot(fs.root)
        fs.fill(leave_pages=2) if state == "full" else fs.read_only()
        with pytest.raises(DataError) as err:  # safetensors raises its own type for ENOSPC
            with artifacts.saving(dest, "policy") as tmp:
                artifacts.save_tensors(tmp / "w.safetensors", {"w": torch.ones(64 << 10)})
        line = str(err.value)
        assert "\n" not in line and str(fs.root) in line and REASON[state] in line, line
        assert kept(before, snapshot(fs.root))
        assert artifacts.load_tensors(dest / "w.safetensors")["w"].shape == (4,)
        fs.restore(state)
        with artifacts.saving(dest, "policy") as tmp:
            artifacts.save_tensors(tmp / "w.safetensors", {"w": torch.ones(64 << 10)})
        assert artifacts.read_manifest(dest, "policy")["kind"] == "policy"


@pytest.mark.parametrize("state", ("full", "read-only"))
def test_the_metrics_log_on_a_refusing_disk_keeps_its_lines(tmp_path, state) -> None:
    from trainers.engine.metrics import MetricsLog

    with small_fs(tmp_path / "fs") as fs:
        log = MetricsLog(fs.root / "run", enabled=True)
        log.write({"step": 1, "loss": 0.5})
        earlier = log.path.read_bytes()
        fs.fill() if state == "full" else fs.read_only()
        with pytest.raises(DataError, match=REASON[state]) as err:
            log.write({"step": 2, "note": "x" * 8192})  # more than the page the log holds
        assert str(log.path) in str(err.value)
        assert log.path.read_bytes() == earlier
        fs.restore(state)
        log.write({"step": 2})
        assert [json.loads(x)["step"] for x in log.path.read_text().splitlines()] == [1, 2]


# room for no weights; for the weights (safetensors) but not the optimizer (torch.save)
@pytest.mark.parametrize("state", ("full 4", "full 80", "read-only"))
def test_a_training_state_the_disk_refuses_is_one_line(tmp_path, state) -> None:
    """accelerate's save_state writes the optimizer with torch.save, whose error on a full
    disk says only "file write failed": the file system's own state names the reason."""
    from accelerate import Accelerator

    from trainers.engine import checkpoint

    acc = Accelerator(cpu=True)
    model = torch.nn.Linear(256, 256)
    opt = acc.prepare(torch.optim.AdamW(model.parameters()))
    model = acc.prepare(model)
    acc.backward(model(torch.ones(1, 256)).sum())
    opt.step()  # AdamW's moments: an optimizer state twice the weights' size
    with small_fs(tmp_path / "fs", size="3m") as fs:
        first = checkpoint.save_state(acc, fs.root, 1, {})
        before = snapshot(fs.root)
        pages = int(state.split()[1]) if state != "read-only" else 0
        fs.fill(leave_pages=pages) if pages else fs.read_only()
        with pytest.raises(DataError) as err:
            checkpoint.save_state(acc, fs.root, 2, {})
        line = str(err.value)
        state = state.split()[0]
        assert "\n" not in line and str(fs.root) in line and REASON[state] in line, line
        assert all(snapshot(fs.root).get(k) == v for k, v in before.items())
        assert checkpoint.latest_state(fs.root) == first
        fs.restore(state)
        assert checkpoint.save_state(acc, fs.root, 2, {}).name != first.name
        assert opt is not None
