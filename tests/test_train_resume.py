"""A run SIGKILLed while step 3 of 4 is in flight resumes and ends where an unbroken run ends."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env

torch = pytest.importorskip("torch")
SCRIPT = str(REPO / "tests" / "toy_task.py")


def _run(out: Path, model: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        SCRIPT,
        str(out),
        "--model",
        str(model),
        "--steps",
        "4",
        "--set",
        "max_tokens=3",
        "--set",
        "micro_batch_rows=5",
        "--parity-reward",
        *extra,
    ]
    return subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=600)


def _weights(run: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(run / "checkpoints" / "final" / "model.safetensors"))


def test_sigkill_then_resume_matches_an_unbroken_run(tmp_path: Path, toy_model: Path) -> None:
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert _run(whole, toy_model).returncode == 0
    killed = _run(broken, toy_model, "--kill-after", "2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    state = json.loads(next((broken / "state").glob("step-*/trainer_state.json")).read_text())
    assert state["step"] == 2  # only the step in flight was lost
    assert not (broken / "checkpoints").exists() or not (broken / "checkpoints" / "final").exists()
    resumed = _run(broken, toy_model, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    a, b = _weights(whole), _weights(broken)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)
    lines = [json.loads(x) for x in (broken / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == [1, 2, 3, 4]
    ref = [json.loads(x) for x in (whole / "metrics.jsonl").read_text().splitlines()]
    assert [m["reward_mean"] for m in lines] == [m["reward_mean"] for m in ref]
    manifest = json.loads((broken / "train_manifest.json").read_text())
    assert manifest["resumed_at_steps"] == [2]


def test_a_second_run_into_the_same_folder_needs_resume(tmp_path: Path, toy_model: Path) -> None:
    out = tmp_path / "run"
    first = subprocess.run(
        [
            sys.executable,
            SCRIPT,
            str(out),
            "--model",
            str(toy_model),
            "--steps",
            "1",
            "--parity-reward",
        ],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    again = subprocess.run(
        [
            sys.executable,
            SCRIPT,
            str(out),
            "--model",
            str(toy_model),
            "--steps",
            "1",
            "--parity-reward",
        ],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode != 0 and "--resume" in again.stderr
