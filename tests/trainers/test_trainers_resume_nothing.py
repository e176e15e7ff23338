"""A resume with nothing to resume (issue 45 item 1): a run stopped before its first state
save keeps no step, so `--resume` says so, still refuses a change to what the run trains
(checked against the recorded config, state or not), and a plain `--resume` takes the run's
recorded config; Ctrl-C before the first save says how many steps were lost and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


def _stopped_before_first_state(out: Path, toy_model: Path) -> None:
    """What a Ctrl-C during step 2 of a state_every=10 run leaves: its manifest and step 1's
    metrics line, no state and no checkpoint (a completed 1-step run, those two removed)."""
    from toy_task import run

    run(out, toy_model, steps=1, parity_reward=True, state_every=10)
    shutil.rmtree(out / "state")
    shutil.rmtree(out / "checkpoints")


def test_a_resume_before_the_first_save_says_so_and_refuses_a_changed_key(
    tmp_path: Path, toy_model: Path, capsys
) -> None:
    from toy_task import run

    from cppo_bench.errors import DataError
    from trainers.engine import interrupt

    out = tmp_path / "run"
    _stopped_before_first_state(out, toy_model)
    lost = interrupt.lost_before_first_state(out)
    assert "1 trained step(s) lost" in lost and "every 10 steps (state_every)" in lost
    before = (out / "train_manifest.json").read_text()
    with pytest.raises(DataError, match=r"--resume would change lr \(0.003 -> 2e-06\)"):
        run(out, toy_model, steps=2, resume=True, parity_reward=True, state_every=10, lr=2e-6)
    assert (out / "train_manifest.json").read_text() == before  # nothing overwritten
    capsys.readouterr()
    result = run(out, toy_model, steps=2, resume=True, parity_reward=True, state_every=10)
    assert result.steps == 2
    err = capsys.readouterr().err
    assert "nothing to resume" in err and "before its first state save" in err
    steps = [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]  # trained again from step 0, no line kept twice


def test_plain_resume_takes_the_recorded_config(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cppo_bench.cli import main

    out = tmp_path / "run"
    out.mkdir()
    recorded = {"kind": "training", "algorithm": "pkpo", "seed": 0,
                "config": {"lr": 2e-6, "max_steps": 7, "n": 8, "gone_key": 1}}  # fmt: skip
    (out / "train_manifest.json").write_text(json.dumps(recorded))
    args = ["train", "pkpo", "--out", str(out), "--print-config"]
    fresh = json.loads(CliRunner().invoke(main, args).stdout)["config"]
    resumed = CliRunner().invoke(main, [*args, "--resume", "--set", "max_steps=9"])
    assert resumed.exit_code == 0, resumed.output
    config = json.loads(resumed.stdout)["config"]
    assert fresh["lr"] != 2e-6 and config["lr"] == 2e-6  # the run's, not the preset's
    assert config["max_steps"] == 9 and config["n"] == 8  # a --set still applies on top
    assert "gone_key" not in config


def test_a_resume_of_a_finished_run_reports_the_same_checkpoint(
    tmp_path: Path, toy_model: Path
) -> None:
    # a resume with no step left saves nothing: it reports the folder `final` names, as the
    # run itself did (the step folder, never the link a later resume moves)
    from toy_task import run

    from trainers.engine.checkpoint import final_folder

    out = tmp_path / "run"
    first = run(out, toy_model, steps=1, parity_reward=True)
    again = run(out, toy_model, steps=1, resume=True, parity_reward=True)
    assert first.checkpoint is not None and first.checkpoint.name.startswith("step-")
    assert again.checkpoint == first.checkpoint == final_folder(out)
    (out / "checkpoints" / "final").unlink()
    (out / "checkpoints" / "final").symlink_to("/etc")  # a planted link: no checkpoint
    assert final_folder(out) is None
