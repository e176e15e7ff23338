"""Folders handed to a library loader (docs/untrusted-inputs.md): accelerate / DeepSpeed
`load_state`, transformers `from_pretrained` and safetensors open files by name and by
listing the folder, so `userfiles.check_folder` checks EVERY entry before any loader runs,
not only the ones a manifest lists. An unlisted FIFO in a saved training state hung
`train --resume`; a link to /dev/zero or a folder where a file goes is one line too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env

from cppo_bench.files import userfiles

SCRIPT = str(REPO / "tests" / "helpers" / "toy_task.py")
PLANTS = ("unlisted FIFO", "link to /dev/zero", "folder where a file goes")


def _plant(folder: Path, how: str) -> str:
    """Plant `how` in `folder`; the name it used."""
    if how == "unlisted FIFO":
        os.mkfifo(folder / "random_states_7.pkl")
        return "random_states_7.pkl"
    listed = json.loads((folder / "artifact.json").read_text())["files"]
    name = sorted(listed)[-1]  # a file the manifest lists
    (folder / name).unlink()
    if how == "link to /dev/zero":
        (folder / name).symlink_to("/dev/zero")
    else:
        (folder / name).mkdir()
    return name


@pytest.mark.parametrize("how", PLANTS)
def test_check_folder_refuses_each_plant_without_opening_it(tmp_path, how):
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x")
    (folder / "artifact.json").write_text(json.dumps({"files": {"model.safetensors": 1}}))
    name = _plant(folder, how)
    with pytest.raises(userfiles.UserFileError) as e:
        userfiles.check_folder(folder, {"model.safetensors", "artifact.json"})
    assert name in str(e.value) and "\n" not in str(e.value)


def test_check_folder_takes_a_hub_snapshot_of_links_to_files(tmp_path):
    blobs, snap = tmp_path / "blobs", tmp_path / "snapshots" / "abc"
    blobs.mkdir()
    snap.mkdir(parents=True)
    (blobs / "1").write_text("{}")
    (snap / "config.json").symlink_to(blobs / "1")
    userfiles.check_folder(snap, links_to_files=True)
    with pytest.raises(userfiles.UserFileError, match="a link"):
        userfiles.check_folder(snap)  # a training state: never a link
    os.mkfifo(blobs / "2")
    (snap / "tokenizer.json").symlink_to(blobs / "2")
    with pytest.raises(userfiles.UserFileError, match="FIFO"):
        userfiles.check_folder(snap, links_to_files=True)


SETS = ("prompts_per_step=1", "max_tokens=2", "n=2", "k_opt=1")


def _train(out: Path, model: Path, steps: int, *extra: str) -> subprocess.CompletedProcess:
    """`cppo-bench train` as a user runs it (a subprocess with a timeout: a loader that
    opened the FIFO would hang, not fail)."""
    sets = (*SETS, f"max_steps={steps}")
    cmd = [sys.executable, "-m", "cppo_bench", "train", "pkpo", "--model", str(model),
           "--out", str(out), "--quiet", *(a for s in sets for a in ("--set", s)), *extra]  # fmt: skip
    return subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True,
                          timeout=600)  # fmt: skip


@pytest.mark.slow
def test_train_resume_refuses_each_plant_in_the_saved_state(tmp_path, toy_model):
    import shutil

    from trainers.engine import checkpoint

    out = tmp_path / "run"
    first = _train(out, toy_model, 1)
    assert first.returncode == 0, first.stderr[-2000:]
    state = checkpoint.latest_state(out)
    assert state is not None
    saved = tmp_path / "saved"
    shutil.copytree(state, saved, symlinks=True)
    for how in PLANTS:
        name = _plant(state, how)
        done = _train(out, toy_model, 2, "--resume")
        assert done.returncode == 1, done.stderr[-2000:]
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and name in errors[0], done.stderr[-2000:]
        shutil.rmtree(state)
        shutil.copytree(saved, state, symlinks=True)
    assert _train(out, toy_model, 2, "--resume").returncode == 0  # the clean state resumes


def test_a_model_folder_with_a_fifo_is_one_line_for_run(tmp_path, toy_model):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(toy_model, model)
    os.mkfifo(model / "tokenizer.json.fifo")
    (model / "generation_config.json").unlink(missing_ok=True)
    (model / "generation_config.json").symlink_to("/dev/zero")
    cmd = [str(Path(sys.executable).parent / "cppo-bench"), "run", "--method", "direct", "--bench", "demo",
           "--model", str(model), "--backend", "hf", "--limit", "1", "--k", "1",
           "--out", str(tmp_path / "runs")]  # fmt: skip
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "refusing to hand this folder to a loader" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("records.jsonl"))


@pytest.mark.parametrize("how", ["folder link", "socket", "listed ../ name"])
def test_more_plants_found_by_trying(tmp_path, how):
    import socket

    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x")
    listed = {"model.safetensors", "artifact.json"}
    (folder / "artifact.json").write_text("{}")
    if how == "folder link":  # os.walk does not descend it; the entry itself is refused
        (tmp_path / "elsewhere").mkdir()
        os.mkfifo(tmp_path / "elsewhere" / "optimizer.bin")
        (folder / "sub").symlink_to(tmp_path / "elsewhere")
    elif how == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(folder / "tokenizer.json"))
        sock.close()
    else:
        (tmp_path / "outside.bin").write_bytes(b"x")
        listed.add("../outside.bin")
    with pytest.raises(userfiles.UserFileError):
        userfiles.check_folder(folder, listed)
    if how != "listed ../ name":  # (a listing is what names the outside file)
        with pytest.raises(userfiles.UserFileError):
            userfiles.check_folder(folder, listed, links_to_files=True)
