"""Two CPU processes (gloo, started by torchrun) take the same steps as one process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import REPO, torchrun, toy_env

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

torch = pytest.importorskip("torch")


def _weights(run: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(run / "checkpoints" / "final" / "model.safetensors"))


def _train(cmd: list[str], out: Path) -> None:
    proc = subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "checkpoints" / "final" / "model.safetensors").is_file()


def test_two_processes_match_one_process(tmp_path: Path, toy_model: Path) -> None:
    script = str(REPO / "tests" / "helpers" / "toy_task.py")
    # 4 prompts per step: one process rolls out all 4, each of two processes 2 of them;
    # micro-batches of 3 rows also split each process's rows unevenly. The parity reward
    # (not the verifier: a random policy almost never passes) gives every group contrast.
    common = [
        "--model",
        str(toy_model),
        "--steps",
        "2",
        "--set",
        "micro_batch_rows=3",
        "--set",
        "max_tokens=3",
        "--parity-reward",
    ]
    one, two = tmp_path / "one", tmp_path / "two"
    _train([sys.executable, script, str(one), *common], one)
    _train(
        [*torchrun(), script, str(two), *common],
        two,
    )
    a, b = _weights(one), _weights(two)
    assert a.keys() == b.keys()
    moved = 0.0
    base = _weights_from(toy_model)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6)
        moved = max(moved, float((a[k] - base[k]).abs().max()))
    assert moved > 1e-4  # the steps really changed the weights
    import json

    manifest = json.loads((two / "train_manifest.json").read_text())
    assert manifest["topology"]["num_processes"] == 2
    steps = [json.loads(line) for line in (two / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in steps] == [1, 2]


def _weights_from(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))
