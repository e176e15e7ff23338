"""Checkpoints: resumable training state, and HF folders that `cppo-bench run` evaluates.

Both are artifacts of the one checkpoint format (trainers.engine.artifacts: written to a
temporary folder, manifest last, fsynced, swapped in by rename). Layout under ``--out``:

    state/step-00000004/   accelerate state (weights, optimizer, scheduler, every RNG) plus
                           trainer_state.json {step, data cursor, seed}; ``state/LATEST`` names
                           the newest complete one; only the newest is kept.
    checkpoints/step-00000004/   an HF folder (config, safetensors, tokenizer, chat template)
                           every ``save_every`` steps and at the end; ``checkpoints/final``
                           links the last. `cppo-bench run --model DIR --trained ALGO` reads it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainers.engine import artifacts, deepspeed_support, sharding, weight_sync
from trainers.harness import DataError, OutDir, quote, userfiles

STATE_DIR = "state"
HF_DIR = "checkpoints"
LATEST = "LATEST"
TRAINER_STATE = "trainer_state.json"


def _name(step: int) -> str:
    return f"step-{step:08d}"


def save_state(
    accelerator: Any,
    out_dir: Path,
    step: int,
    extra: dict[str, Any],
    sharded: tuple[Any, Any] | None = None,
) -> Path:
    """Save the full training state after ``step`` steps; returns its folder. ``sharded``:
    the (model, optimizer) the engine sharded itself (FSDP2), which accelerate does not know:
    gathered to full tensors and written as safetensors by the main process."""
    root = Path(out_dir) / STATE_DIR
    final = root / _name(step)
    if accelerator.is_main_process:
        OutDir(out_dir).folder(STATE_DIR)  # never through a link planted at state/
        artifacts.prepare(final)
    accelerator.wait_for_everyone()
    tmp = artifacts.tmp_path(final)
    # a full or read-only disk: one line; the temporary folder is cleared by the next save
    with artifacts.refusing(final, "training_state"), artifacts.quiet():
        accelerator.save_state(str(tmp))  # every process writes its RNG state; main the rest
    if sharded is not None:
        sharding.save_sharded_state(*sharded, tmp, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        OutDir(tmp).write_text(TRAINER_STATE, json.dumps({"step": step, **extra}, indent=2) + "\n")
        artifacts.finish(tmp, final, "training_state", {"step": step})
        artifacts.atomic_write_text(root / LATEST, final.name + "\n")
        for old in root.glob("step-*"):
            if old.name != final.name:
                artifacts.discard(root, old.name)
    accelerator.wait_for_everyone()
    return final


def latest_state(out_dir: Path) -> Path | None:
    """The newest complete training state in ``out_dir``; None when it holds none yet. A
    pointer that exists but cannot be followed (a link, garbage, a missing or torn folder) is
    one DataError line: taken for "no state", the run would start over in that folder and
    truncate its metrics log."""
    pointer = Path(out_dir) / STATE_DIR / LATEST
    if not pointer.exists() and not pointer.is_symlink():
        return None
    if pointer.is_symlink() or not pointer.is_file():
        raise DataError(f"{pointer}: not a plain file; this run folder's state cannot be read")
    name = userfiles.read_bytes(pointer, 4096).decode("utf-8", "replace").strip()
    if not name.startswith("step-") or "/" in name:
        raise DataError(f"{pointer}: names {quote(name[:40])}, not a state folder step-N")
    folder = userfiles.inside(pointer.parent, name, f"{pointer}: the state")  # no link out
    if folder.parent != pointer.parent.resolve():
        raise DataError(f"{pointer}: names {quote(name[:40])}, not a state folder step-N")
    artifacts.read_manifest(folder, "training_state")  # one ArtifactError line if not complete
    return folder


def agreed_state(accelerator: Any, out_dir: Path) -> Path | None:
    """``latest_state`` as every process sees it, or one DataError line on every process
    when they differ: accelerate writes each process's RNG state into the one state folder,
    so ``--out`` must be a folder every process sees (a shared file system). Without this
    check a process that sees no state starts at step 0 while the others resume, and the
    first collective they disagree on hangs the job."""
    found: Path | None = None
    problem: DataError | None = None
    with accelerator.main_process_first():  # one process finishes a swap a kill interrupted
        try:
            found = latest_state(out_dir)
        except DataError as exc:  # raised below, once every process knows (no one hangs)
            problem = exc

    def seen() -> Path | None:
        if problem is not None:
            raise problem
        return found

    existing = _on_every_process(accelerator, Path(out_dir) / STATE_DIR, seen)
    if accelerator.num_processes > 1:
        step = -1 if existing is None else int(existing.name.removeprefix("step-"))
        steps = _gather_ints(accelerator, step)
        if len(set(steps)) > 1:
            views = ", ".join(
                f"process {i}: {'none' if s < 0 else _name(s)}" for i, s in enumerate(steps)
            )
            raise DataError(
                f"{Path(out_dir) / STATE_DIR}: the processes see different training states "
                f"({views}); --out must be one folder that every process sees (a shared "
                "file system)"
            )
    return existing


def _gather_ints(accelerator: Any, value: int) -> list[int]:
    import torch

    t = torch.tensor([value], dtype=torch.long, device=accelerator.device)
    return [int(x) for x in accelerator.gather(t).cpu().tolist()]


def _on_every_process(accelerator: Any, folder: Path, phase: Callable[[], Any]) -> Any:
    """Run ``phase`` here, then agree with every process that it worked: on any failure each
    process raises (its own line, or one naming the process that failed). The next phase
    holds collectives, and one process leaving early would leave the others waiting forever."""
    error: DataError | None = None
    result = None
    try:
        result = phase()
    except Exception as exc:  # a hostile state raises anything; one line, on every process
        error = _one_line(folder, exc)
    if accelerator.num_processes > 1:
        failed = _gather_ints(accelerator, int(error is not None))
        if error is None and any(failed):
            error = DataError(
                f"{folder}: process {failed.index(1)} cannot load the training state (its own "
                "line says why); no process resumes"
            )
    if error is not None:
        raise error
    return result


def _one_line(folder: Path, exc: BaseException) -> DataError:
    if isinstance(exc, DataError):
        return exc
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    return DataError(
        f"{folder}: the training state cannot be loaded ({type(exc).__name__}: {text})"
    )


def _read_trainer_state(folder: Path, process: int) -> dict[str, Any]:
    from accelerate.utils import load as accelerate_load

    artifacts.read_manifest(folder, "training_state")
    try:
        state = userfiles.read_json(folder / TRAINER_STATE, userfiles.MAX_SMALL)
        if not isinstance(state.get("step"), int) or state["step"] < 0:
            raise ValueError("no step")
    except (OSError, ValueError, AttributeError):
        raise DataError(f"{folder / TRAINER_STATE}: not a trainer state") from None
    rng = folder / f"random_states_{process}.pkl"
    try:
        accelerate_load(rng)  # accelerate's own (restricted) loader, as load_state uses it
    except Exception as exc:  # the unpickler raises many types for a hostile file
        raise DataError(
            f"{rng}: the RNG state cannot be read ({type(exc).__name__}); resuming from it "
            "would not be exact"
        ) from None
    return state


def load_state(
    accelerator: Any,
    folder: Path,
    sharded: tuple[Any, Any] | None = None,
    trusted_globals: str = "",
) -> dict[str, Any]:
    """Restore a saved state exactly, or one DataError line on every process: a state from
    elsewhere may hold anything, and accelerate only logs (at info level) an RNG state it
    cannot read, which would make the promised exact resume silently inexact. Each phase
    that a single process can fail (its own RNG file, the sharded state that rank 0 reads)
    ends with every process agreeing it worked before the collectives of the next begin.
    A DeepSpeed state is pickled: its files are read with the restricted unpickler first
    (``trusted_globals``: TrainConfig.trusted_state_globals)."""

    def read() -> dict[str, Any]:
        state = _read_trainer_state(folder, accelerator.process_index)
        if deepspeed_support.active(accelerator):
            deepspeed_support.check_state_pickles(folder, trusted_globals)
        return state

    state = _on_every_process(accelerator, folder, read)
    # weights, optimizer, scheduler: any of them may be hostile
    _on_every_process(accelerator, folder, lambda: accelerator.load_state(str(folder)))
    if sharded is not None:
        # rank 0 alone reads the full tensors and broadcasts them: one host copy
        main = accelerator.is_main_process
        full = _on_every_process(
            accelerator, folder, lambda: sharding.read_sharded_state(folder) if main else None
        )
        try:
            sharding.apply_sharded_state(*sharded, full)
        except Exception as exc:  # a full state of the wrong shapes or names
            raise _one_line(folder, exc) from None
    return state


def final_folder(out_dir: Path) -> Path | None:
    """The step folder ``checkpoints/final`` links to (None without one); a link this code
    did not make (a target that is not a plain ``step-*`` name beside it) is no checkpoint."""
    final = Path(out_dir) / HF_DIR / "final"
    if not final.is_symlink():
        return final if final.is_dir() else None
    target = os.readlink(final)
    if os.sep in target or not target.startswith("step-"):
        return None
    folder = final.parent / target
    return folder if folder.is_dir() else None


def save_hf(
    accelerator: Any, model: Any, tokenizer: Any, out_dir: Path, step: int, keep: int = 0
) -> Path | None:
    """Write an HF folder of the current policy (gathered from every shard); main process."""
    if sharding.is_fsdp2(model):  # sharded by the engine: accelerate does not know it
        state = sharding.full_state_dict(model)
    elif weight_sync.layout(accelerator.unwrap_model(model)) == "zero3":
        # gathered module by module: no zero3_save_16bit_model flag needed, fp32 kept
        main = accelerator.is_main_process
        state = {}
        for name, tensor in weight_sync.full_tensors(accelerator.unwrap_model(model)):
            if main:
                state[name] = tensor.detach().cpu().clone()
    else:
        state = accelerator.get_state_dict(model)  # full state dict even under FSDP / ZeRO-3
    root = Path(out_dir) / HF_DIR
    dest = root / _name(step)
    if not accelerator.is_main_process:
        return None
    OutDir(out_dir).folder(HF_DIR)  # never through a link planted at checkpoints/
    unwrapped = accelerator.unwrap_model(model)
    was = unwrapped.config.use_cache
    with artifacts.saving(dest, "policy", {"step": step}) as tmp:
        unwrapped.config.use_cache = True  # training turns the KV cache off; inference wants it
        try:
            artifacts.save_pretrained(unwrapped, tmp, state)
        finally:
            unwrapped.config.use_cache = was
        tokenizer.save_pretrained(tmp)
    OutDir(root).link("final", dest.name)
    if keep > 0:  # a negative count never reaches the slice below (it would keep none)
        for old in sorted(root.glob("step-*"))[:-keep]:
            artifacts.discard(root, old.name)
    return dest
