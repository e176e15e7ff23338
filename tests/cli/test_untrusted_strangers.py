"""Issue 37, items 5 to 7 (items 1 to 4: tests/store/test_untrusted_doors.py): a stranger's model
folder or training log, a file system that fails, one bad run beside good ones. Every case
ends in one line naming the file or value; nothing is executed or lost."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
from cli_subprocess import cli as _cli
from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.cli import main
from cppo_bench.errors import DataError

# --- 5. a stranger's training log and model names drawn in figures ------------------------------


@pytest.mark.parametrize("manifest, metrics, skipped", [
    ("[]", '{"step": 1, "grad_norm": 1}\n', True),  # not an object: AttributeError before
    ('{"algorithm": "pkpo", "seed": 1e400}', '{"step": 1}\n', True),  # OverflowError before
    ('{"algorithm": "pkpo"}', "[" * 5000 + "]" * 5000 + "\n", True),  # RecursionError before
    # a number no float holds (OverflowError before): that point is not drawn, the run is
    ('{"algorithm": "pkpo"}', '{"step": 1, "grad_norm": ' + "9" * 400 + "}\n", False),
])  # fmt: skip
def test_malformed_training_logs_skip_that_run(
    tmp_path: Path, manifest: str, metrics: str, skipped: bool
) -> None:
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    bad = runs / "train" / "bad"
    bad.mkdir(parents=True)
    (bad / "train_manifest.json").write_text(manifest)
    (bad / "metrics.jsonl").write_text(metrics)
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert ("training run skipped" in result.output) == skipped
    assert str(bad) in result.output or not skipped


@pytest.mark.parametrize("model", ["$\\frac{a}{b}$", "{" * 450 + "x" + "}" * 450, "$x", "a_b^c"])
def test_model_names_in_figures_are_plain_text(tmp_path: Path, model: str) -> None:
    runs = tmp_path / "runs"
    good = runs / "train" / "run0"
    good.mkdir(parents=True)
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    (good / "train_manifest.json").write_text(
        json.dumps({"algorithm": "pkpo", "base_model": model, "seed": 0})
    )
    (good / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"step": s, "epoch": s / 4, "grad_norm": 1.0 + s}) + "\n" for s in range(4)
        )
    )
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "out" / "figures").glob("*pkpo*.png"))


# --- 6. the store's file system can fail ----------------------------------------------------------


def test_lock_naming_an_impossible_pid_is_stale(tmp_path: Path) -> None:
    import socket

    from cppo_bench.files.lock import RunLock, lock_path

    run_dir = tmp_path / "run"
    lock_path(run_dir).write_text(json.dumps({"host": socket.gethostname(), "pid": 2**64,
                                              "start": "1"}))  # fmt: skip
    with RunLock(run_dir, 0):
        pass
    assert not lock_path(run_dir).exists()


@pytest.mark.parametrize("err", [errno.EROFS, errno.ENOSPC, errno.EACCES])
def test_lock_and_atomic_write_on_a_failing_disk(tmp_path: Path, monkeypatch, err: int) -> None:
    from cppo_bench.files import fs as storefs
    from cppo_bench.files import lock as runlock

    target = tmp_path / "manifest.json"
    target.write_text("old\n")
    real_open = os.open

    def failing(path, flags, *a):  # noqa: ANN001, ANN202
        if flags & os.O_CREAT:
            raise OSError(err, os.strerror(err), str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(storefs.os, "open", failing)
    with pytest.raises(DataError) as e:
        storefs.write_atomic(target, "new\n", root=tmp_path)
    assert str(e.value).startswith(f"{target}: cannot write") and "\n" not in str(e.value)
    assert target.read_text() == "old\n"  # nothing lost
    monkeypatch.setattr(runlock.os, "open", failing)
    with pytest.raises(DataError, match="cannot take the run's lock"):
        runlock.RunLock(tmp_path / "run", 0).acquire()


def test_full_disk_midway_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    from cppo_bench.files import fs as storefs

    target = tmp_path / "manifest.json"
    target.write_text("old\n")
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):  # noqa: ANN001
            self.fh = fh

        def __enter__(self):  # noqa: ANN204
            return self

        def __exit__(self, *exc):  # noqa: ANN002, ANN204
            self.fh.close()

        def write(self, data):  # noqa: ANN001, ANN201
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storefs.os, "fdopen", lambda fd, *a, **k: Full(real_fdopen(fd, *a, **k)))
    with pytest.raises(DataError, match="No space left on device"):
        storefs.write_atomic(target, "new\n", root=tmp_path)
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # no temp left


def test_a_full_disk_during_a_run_is_one_line_and_the_resume_completes(
    tmp_path: Path, monkeypatch
) -> None:
    from cppo_bench.files import fs as storefs

    out = tmp_path / "runs"
    args = ["run", "--bench", "demo", "--method", "direct", "--backend", "run_scripted:make",
            "--out", str(out), "--quiet", "--limit", "4", "--chunk-size", "2"]  # fmt: skip
    real_open = os.open
    calls = {"n": 0}

    def full(path, flags, *a):  # noqa: ANN001, ANN202
        if str(path).endswith("records.jsonl") and flags & os.O_APPEND:
            calls["n"] += 1
            if calls["n"] == 2:  # the second chunk's append: the disk is full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(storefs.os, "open", full)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    # one line naming the file and the OS reason (the writer's own line, issue 37 item 6)
    assert re.search(r"Error: \S+records\.jsonl: [^\n]*\(No space left on device\)", result.output)
    monkeypatch.setattr(storefs.os, "open", real_open)
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    listing = json.loads(CliRunner().invoke(main, ["runs", "--out", str(out), "--json"]).output)
    # every problem asked for (--limit 4) is stored: the listing calls it partial only
    # because --limit left most of the benchmark out, as stats does
    assert listing["done"] == 4 and listing["status"] == "partial: 4/32 of the benchmark"


# --- 7. one bad run does not hide the good ones ---------------------------------------------------


def test_one_bad_manifest_leaves_the_good_runs_counted(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for model in ("good", "bad"):
        _write(runs, Plant("direct", model, "demo", 0, [[True] * 4] * N, planner=[0] * N,
                           solver=[0] * N))  # fmt: skip
    bad = next(p for p in runs.rglob("manifest.json") if "/bad/" in str(p))
    doc = json.loads(bad.read_text())
    doc["k"] = "four"
    bad.write_text(json.dumps(doc))
    result = _cli("stats", "passk", "--runs", str(runs))
    assert result.returncode == 0, result.stderr
    assert "pass@1" in result.stdout and "n=24" in result.stdout
    assert "skipped 1 unreadable run(s)" in result.stderr and str(bad) in result.stderr

    from cppo_bench import load_runs

    frame = load_runs(runs)
    assert set(frame["model"]) == {"good"} and frame.attrs["skipped"]["runs"] == 1
    report = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert report.exit_code == 0, report.output
    assert "1 unreadable run(s) and 0 bad record line(s) left out" in report.output


def test_hand_edited_record_lines_are_named_and_counted(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    rec = next(runs.rglob("records.jsonl"))
    lines = rec.read_text().splitlines()
    a, b = json.loads(lines[0]), json.loads(lines[1])
    a["problem_id"] = [1]
    b["branches"][0]["passed"] = "false"
    rec.write_text("\n".join([json.dumps(a), json.dumps(b), *lines[2:]]) + "\n")
    result = CliRunner().invoke(main, ["runs", "--out", str(runs), "--json"])
    row = json.loads(result.output.splitlines()[-1])
    assert row["done"] == N - 2 and "2 bad line(s) skipped" in row["status"]
    assert any(s.startswith(f"{rec}:1:") for s in row["skipped"])
    assert any(s.startswith(f"{rec}:2:") for s in row["skipped"])


def test_a_lying_model_folder_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import shutil
    import struct

    from toy_task import toy_model_dir

    from cppo_bench.backends.base import ModelLoadError
    from cppo_bench.backends.hf_load import load_model

    base = toy_model_dir(tmp_path / "base")
    lie, remote = tmp_path / "lie", tmp_path / "remote"
    shutil.copytree(base, lie)
    shutil.copytree(base, remote)
    data = (lie / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"] = [0, 10**12]
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    (lie / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n :])
    config = json.loads((remote / "config.json").read_text())
    config.update(model_type="evil", auto_map={"AutoConfig": "evil.C",
                                               "AutoModelForCausalLM": "evil.M"})  # fmt: skip
    (remote / "config.json").write_text(json.dumps(config))
    (remote / "evil.py").write_text(f"open({str(tmp_path / 'PWNED')!r}, 'w')\n")
    import torch

    for folder in (lie, remote):
        with pytest.raises(ModelLoadError) as err:
            load_model(str(folder), dtype=torch.float32)
        assert str(folder) in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "PWNED").exists()
