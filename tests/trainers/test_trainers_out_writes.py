"""Door 3 (docs/untrusted-inputs.md) for the trainers: a run or stage folder may be a
stranger's (`train --resume`, a shared pipeline folder), so links planted at the names a
trainer writes are never followed. A link at a file's name is replaced by the new file (its
target kept); a link at a folder's name (a stage, `state/`, `checkpoints/`, an artifact) is
one DataError line naming it, and nothing is written outside. The walk that keeps every
trainer write on this path is tests/files/test_untrusted_writer.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cppo_bench.errors import DataError
from cppo_bench.files.outdir import OutDirError

pytest.importorskip("torch")


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    return victim


def _one_line(exc: BaseException, path: Path) -> None:
    text = str(exc)
    assert text.startswith(f"{path}: ") and "\n" not in text, text
    assert "symbolic link" in text or "not a folder" in text, text


# --- the artifact format: the folder a library (save_pretrained, save_state) writes into ---


@pytest.mark.parametrize("at", ["dest", "tmp"])
def test_an_artifact_never_goes_through_a_planted_folder_link(tmp_path: Path, at: str) -> None:
    from trainers.engine import artifacts

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "run" / "checkpoints"
    root.mkdir(parents=True)
    dest = root / "step-00000004"
    planted = dest if at == "dest" else artifacts.tmp_path(dest)
    planted.symlink_to(elsewhere)
    with pytest.raises(OutDirError) as err:
        with artifacts.saving(dest, "policy") as tmp:
            (tmp / "weights.bin").write_bytes(b"w")  # a library writing into the folder
    _one_line(err.value, planted)
    assert list(elsewhere.iterdir()) == []


def test_an_artifact_refuses_a_file_at_its_temporary_name(tmp_path: Path) -> None:
    from trainers.engine import artifacts

    dest = tmp_path / "step-00000001"
    artifacts.tmp_path(dest).write_text("planted")
    with pytest.raises(OutDirError, match="exists and is not a folder"):
        artifacts.prepare(dest)


def test_an_unfinished_temporary_folder_is_replaced_not_entered(tmp_path: Path) -> None:
    """A kill left `.tmp-X` with a link inside it: removed (rmtree does not follow it)."""
    from trainers.engine import artifacts

    victim = _victim(tmp_path)
    dest = tmp_path / "run" / "step-00000001"
    left = artifacts.tmp_path(dest)
    left.mkdir(parents=True)
    (left / "model.safetensors").symlink_to(victim)
    with artifacts.saving(dest, "policy") as tmp:
        (tmp / "model.safetensors").write_bytes(b"new")
    assert (dest / "model.safetensors").read_bytes() == b"new"
    assert victim.read_text() == "keep me\n"


def test_final_and_latest_replace_planted_links(tmp_path: Path) -> None:
    from cppo_bench.files.outdir import OutDir
    from trainers.engine import artifacts

    victim = _victim(tmp_path)
    root = tmp_path / "state"
    root.mkdir()
    (root / "LATEST").symlink_to(victim)
    artifacts.atomic_write_text(root / "LATEST", "step-00000002\n")
    assert victim.read_text() == "keep me\n" and not (root / "LATEST").is_symlink()
    (root / "final").symlink_to(victim)
    OutDir(root).link("final", "step-00000002")
    assert (root / "final").readlink() == Path("step-00000002")
    assert victim.read_text() == "keep me\n"


def test_tidying_an_interrupted_run_never_enters_a_linked_folder(tmp_path: Path) -> None:
    from trainers.engine.interrupt import clean_partial

    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    (elsewhere / ".tmp-step-00000001").mkdir(parents=True)
    (out / "warmup").mkdir(parents=True)
    (out / "warmup" / "state").symlink_to(elsewhere)
    mine = out / "state" / ".tmp-step-00000002"
    mine.mkdir(parents=True)
    assert clean_partial(out) == [mine]
    assert (elsewhere / ".tmp-step-00000001").is_dir()


# --- the engine: a whole (toy) training run into a folder with planted links -------------


@pytest.mark.parametrize("name", ["state", "checkpoints"])
def test_a_run_refuses_a_linked_state_or_checkpoint_folder(
    tmp_path: Path, toy_model: Path, name: str
) -> None:
    from toy_task import run

    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / name).symlink_to(elsewhere)
    with pytest.raises(DataError) as err:
        run(out, toy_model, steps=1, parity_reward=True)
    _one_line(err.value, out / name)
    assert list(elsewhere.iterdir()) == []


def test_the_cli_says_one_line_and_writes_nothing_outside(tmp_path: Path, toy_model: Path) -> None:
    import subprocess
    import sys

    from tests_paths import REPO, toy_env

    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "checkpoints").symlink_to(elsewhere)
    sets = ("max_steps=1", "prompts_per_step=1", "max_tokens=2", "n=2", "k_opt=1")
    cmd = [sys.executable, "-m", "cppo_bench", "train", "pkpo", "--model", str(toy_model),
           "--out", str(out), "--quiet", *(a for s in sets for a in ("--set", s))]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [f"Error: {out / 'checkpoints'}: is a symbolic link; an output folder's "
                      "files are never followed through links"], proc.stderr[-2000:]  # fmt: skip
    assert list(elsewhere.iterdir()) == []


def test_a_run_replaces_a_planted_manifest_link(tmp_path: Path, toy_model: Path) -> None:
    from toy_task import run

    victim = _victim(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    (out / "train_manifest.json").symlink_to(victim)
    run(out, toy_model, steps=1, parity_reward=True)
    assert victim.read_text() == "keep me\n"
    assert json.loads((out / "train_manifest.json").read_text())["algorithm"] == "pkpo"
    assert not (out / "checkpoints" / "final").resolve().is_relative_to(tmp_path / "victim")


# --- the CPPO pipeline: stage folders and the files a stage writes -------------------------


def test_a_linked_stage_folder_is_one_line(tmp_path: Path) -> None:
    from trainers.cppo_pipeline.stages import StageResult, run_stages

    out, elsewhere = tmp_path / "pipeline", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "sft").symlink_to(elsewhere)
    stages = {"sft": lambda ctx: StageResult(())}
    with pytest.raises(DataError) as err:
        run_stages(out, stages, ["sft"], {}, echo=lambda s: None)
    _one_line(err.value, out / "sft")
    assert list(elsewhere.iterdir()) == []


def test_stage_files_replace_planted_links(tmp_path: Path) -> None:
    """The stage manifest, the exposure record, the RM pool and score files."""
    import torch

    from trainers.cppo_pipeline.exposure import EXPOSURE, write_exposure
    from trainers.cppo_pipeline.pool import POOL, write_pool
    from trainers.cppo_pipeline.stage_data import write_scores
    from trainers.cppo_pipeline.stages import MANIFEST, StageContext, StageResult, write_manifest

    victim = _victim(tmp_path)
    folder = tmp_path / "pipeline" / "rm"
    folder.mkdir(parents=True)
    names = (MANIFEST, EXPOSURE, POOL, "val_scores.jsonl")
    for name in names:
        (folder / name).symlink_to(victim)
    write_manifest(StageContext("rm", folder, {}, {}), "complete", StageResult(()))
    write_exposure(folder, [])
    write_pool(folder, [])
    write_scores(folder / "val_scores.jsonl", torch.tensor([]), [], 0.5, "val")
    assert victim.read_text() == "keep me\n"
    for name in names:
        assert (folder / name).is_file() and not (folder / name).is_symlink()
    assert json.loads((folder / MANIFEST).read_text())["status"] == "complete"


def test_the_rm_stage_never_writes_through_planted_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real RM stage on the tiny pipeline: its data, score and metrics files planted as
    links to a file outside, and its reward-model folder as a link to a folder outside."""
    from tests.helpers.cppo_stage_fixture import prepared
    from trainers.cppo_pipeline import reward_model as rmod
    from trainers.cppo_pipeline.pipeline import run_pipeline
    from trainers.cppo_pipeline.stage_data import RM_DATA, RM_DIR, VAL_SCORES

    victim = _victim(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out, inputs = prepared(tmp_path, upto="sft")
    folder = out / "rm"
    folder.mkdir()
    for name in (RM_DATA, VAL_SCORES, "rm_metrics.json", "exposure.json"):
        (folder / name).symlink_to(victim)
    (folder / RM_DIR).symlink_to(elsewhere)
    # the tiny RM is (rightly) rejected on its metrics; this test is about what it then saves
    monkeypatch.setattr(rmod, "accept", lambda metrics: None)
    with pytest.raises(DataError) as err:
        run_pipeline(out, inputs, ["rm"], echo=lambda s: None)
    _one_line(err.value, folder / RM_DIR)
    assert victim.read_text() == "keep me\n" and list(elsewhere.iterdir()) == []
    assert json.loads((folder / "rm_metrics.json").read_text())["val"] > 0


@pytest.mark.parametrize("tracker", ["tensorboard", "wandb"])
def test_a_tracker_folder_planted_as_a_link_is_one_line(tmp_path: Path, tracker: str) -> None:
    """`--report-to`: the library writes its own folder under --out; that folder is made
    (or found) real first. A resumed run's real folder is kept with its logs."""
    from trainers.engine.trackers import TRACKERS, tracker_folder

    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    name = TRACKERS.get(tracker).folder
    (out / name).symlink_to(elsewhere)
    with pytest.raises(DataError) as err:
        tracker_folder(tracker, out)
    _one_line(err.value, out / name)
    (out / name).unlink()
    (out / name).mkdir()
    (out / name / "events.1").write_text("kept")
    tracker_folder(tracker, out)
    assert (out / name / "events.1").read_text() == "kept"


def test_an_artifact_refuses_a_linked_folder_above_it(tmp_path: Path) -> None:
    """A joint stage's refreshed RMs go to `joint/rm/step-N`: `rm` planted as a link."""
    from trainers.engine import artifacts

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "step-00000002").mkdir(parents=True)
    stage = tmp_path / "pipeline" / "joint"
    stage.mkdir(parents=True)
    (stage / "rm").symlink_to(elsewhere)
    with pytest.raises(OutDirError) as err:
        with artifacts.saving(stage / "rm" / "step-00000002", "reward_model"):
            pass
    _one_line(err.value, stage / "rm")
    assert [p.name for p in elsewhere.iterdir()] == ["step-00000002"]
