"""Checkpoints: resumable training state, and HF folders that `cppo-bench run` evaluates.

Layout under the run's ``--out`` folder:

    state/step-00000004/   accelerate state (weights, optimizer, scheduler, every RNG) plus
                           trainer_state.json {step, data cursor, seed}; ``state/LATEST`` names
                           the newest complete one. Written to a temporary name and renamed,
                           so a SIGKILL mid-save leaves the previous state intact; only the
                           newest is kept.
    checkpoints/step-00000004/   an HF folder (config, safetensors, tokenizer, chat template)
                           every ``save_every`` steps and at the end; ``checkpoints/final``
                           links the last. `cppo-bench run --model DIR --trained ALGO` reads it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

STATE_DIR = "state"
HF_DIR = "checkpoints"
LATEST = "LATEST"
TRAINER_STATE = "trainer_state.json"


def _name(step: int) -> str:
    return f"step-{step:08d}"


def save_state(accelerator: Any, out_dir: Path, step: int, extra: dict[str, Any]) -> Path:
    """Save the full training state after ``step`` steps; returns its folder."""
    root = Path(out_dir) / STATE_DIR
    final = root / _name(step)
    tmp = root / f".tmp-{_name(step)}"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))  # every process writes its own RNG state; main the rest
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (tmp / TRAINER_STATE).write_text(json.dumps({"step": step, **extra}, indent=2) + "\n")
        _fsync_tree(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        pointer = root / f".{LATEST}.tmp"
        pointer.write_text(final.name + "\n")
        os.replace(pointer, root / LATEST)
        for old in root.glob("step-*"):
            if old.name != final.name:
                shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def _fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())


def latest_state(out_dir: Path) -> Path | None:
    pointer = Path(out_dir) / STATE_DIR / LATEST
    if not pointer.is_file():
        return None
    folder = pointer.parent / pointer.read_text().strip()
    return folder if (folder / TRAINER_STATE).is_file() else None


def load_state(accelerator: Any, folder: Path) -> dict[str, Any]:
    accelerator.load_state(str(folder))
    return json.loads((folder / TRAINER_STATE).read_text())


def save_hf(accelerator: Any, model: Any, tokenizer: Any, out_dir: Path, step: int,
            keep: int = 0) -> Path | None:
    """Write an HF folder of the current policy (gathered from every shard); main process."""
    state = accelerator.get_state_dict(model)  # full state dict even under FSDP / ZeRO-3
    root = Path(out_dir) / HF_DIR
    dest = root / _name(step)
    if not accelerator.is_main_process:
        return None
    tmp = root / f".tmp-{_name(step)}"
    shutil.rmtree(tmp, ignore_errors=True)
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained(tmp, state_dict=state, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(tmp, dest)
    link = root / "final"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(dest.name)
    if keep:
        for old in sorted(root.glob("step-*"))[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return dest
