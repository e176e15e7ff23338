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
SCRIPT = str(REPO / "tests" / "helpers" / "toy_task.py")


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


class _Gadget:
    """Unpickling this runs a shell command: what a hostile state file would carry."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        import os

        return (os.system, (f"touch {self.marker}",))


def _plant(state: Path, name: str, payload: bytes) -> None:
    """Replace one file of a saved state, with a manifest that agrees (a crafted folder)."""
    (state / name).write_bytes(payload)
    manifest = json.loads((state / "artifact.json").read_text())
    manifest["files"][name] = len(payload)
    (state / "artifact.json").write_text(json.dumps(manifest))


def test_resume_checks_the_run_and_never_trusts_its_state(tmp_path: Path, toy_model: Path) -> None:
    import pickle
    import shutil

    from toy_task import run

    from cppo_bench.errors import DataError
    from tests.helpers.train_helpers import tiny_model_dir
    from trainers.engine import checkpoint

    out = tmp_path / "run"
    run(out, toy_model, steps=1, parity_reward=True)
    with pytest.raises(DataError, match="a pkpo run; --resume continues it only as pkpo"):
        run(out, toy_model, algo="upskill", steps=2, resume=True, parity_reward=True)
    other = tiny_model_dir(tmp_path / "other", seed=1)
    with pytest.raises(DataError, match="--resume needs that base model"):
        run(out, other, steps=2, resume=True, parity_reward=True)
    state = checkpoint.latest_state(out)
    assert state is not None
    saved = tmp_path / "saved-state"
    shutil.copytree(state, saved)
    marker = tmp_path / "pwned"
    gadget = pickle.dumps(_Gadget(marker))
    _plant(state, "random_states_0.pkl", gadget)
    with pytest.raises(DataError, match="RNG state cannot be read.*would not be exact"):
        run(out, toy_model, steps=2, resume=True, parity_reward=True)
    shutil.rmtree(state)
    shutil.copytree(saved, state)
    weights = next(n for n in ("optimizer.bin", "pytorch_model.bin") if (state / n).is_file())
    _plant(state, weights, gadget)
    with pytest.raises(DataError, match="training state cannot be loaded"):
        run(out, toy_model, steps=2, resume=True, parity_reward=True)
    assert not marker.exists()  # nothing ran
    shutil.rmtree(state)
    shutil.copytree(saved, state)
    assert run(out, toy_model, steps=2, resume=True, parity_reward=True).steps == 2


@pytest.mark.parametrize("pointer", ["link", "garbage", "missing folder"])
def test_a_state_pointer_that_cannot_be_followed_is_one_line_not_a_fresh_start(
    tmp_path: Path, toy_model: Path, pointer: str
) -> None:
    """Taken for "no state yet", a broken state/LATEST made the run start over in the folder
    and truncate its metrics log (a stranger's folder, a link planted in it)."""
    from toy_task import run

    from cppo_bench.errors import DataError

    out = tmp_path / "run"
    run(out, toy_model, steps=2, parity_reward=True)
    log = (out / "metrics.jsonl").read_text()
    latest = out / "state" / "LATEST"
    latest.unlink()
    if pointer == "link":
        latest.symlink_to(out / "metrics.jsonl")
    else:
        latest.write_text("../../elsewhere\n" if pointer == "garbage" else "step-00000099\n")
    message = {
        "link": "LATEST: not a plain file",
        "garbage": "LATEST: names '../../elsewhere', not a state folder",
        "missing folder": "step-00000099: not a cppo-bench artifact",
    }[pointer]
    for resume in (True, False):
        with pytest.raises(DataError, match=message):
            run(out, toy_model, steps=3, resume=resume, parity_reward=True)
    assert (out / "metrics.jsonl").read_text() == log  # nothing overwritten
