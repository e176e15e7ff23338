"""One checkpoint format for every trained artifact: policy, SFT planner, reward model, state.

An artifact is a folder: its files (HF ``save_pretrained`` output, safetensors weights, JSON)
plus ``artifact.json`` {schema, kind, created, files: {name: bytes}, meta}. ``saving(dest,
kind)`` yields a fresh temporary folder beside ``dest``; only when the writer returns does it
write the manifest, fsync every file, and swap the folder in by renames (``dest`` -> ``.old-``,
temporary -> ``dest``, then the old one is removed). A kill at any moment therefore leaves
either the old artifact or the new one: ``recover`` (run by every load and save) puts a
stranded ``.old-`` folder back, and a folder without a complete manifest is never loaded.
Weights are safetensors or HF folders: loading never unpickles anything.

Every write goes through the one writer under an output folder (cppo_bench/files/outdir.py,
docs/untrusted-inputs.md door 3): a run folder may be a stranger's (``--resume``), so a link
planted at an artifact's name is one line, never followed; the temporary folder a library
writes into (``save_pretrained``, ``save_state``) is made fresh there.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainers.harness import (
    DataError,
    OutDir,
    check_real_folder,
    jsonio,
    os_reason,
    quote,
    userfiles,
)

MANIFEST = "artifact.json"
SCHEMA = "cppo-bench-artifact/1"
KINDS = ("policy", "planner", "reward_model", "training_state")
MAX_MANIFEST_BYTES = 1 << 20

# test hook: called with a phase name at each step of a save (the kill-during-save tests)
on_phase: Callable[[str], None] = lambda phase: None  # noqa: E731


class ArtifactError(DataError):
    """A folder that is not a complete artifact of the expected kind (one line)."""


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as fh:
                os.fsync(fh.fileno())
    for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        _fsync_dir(sub)


def atomic_write_text(path: Path, text: str) -> None:
    """``path`` replaced in one rename by a fsynced temporary file; never through a link."""
    path = Path(path)
    OutDir(path.parent).write_text(path.name, text, fsync=True)
    _fsync_dir(path.parent)


def discard(folder: Path, name: str) -> None:
    """Remove ``folder/name`` (a tree, or a link itself), quietly: tidying, not saving."""
    try:
        OutDir(folder).clear(name)
    except (OSError, DataError):
        pass


def _old(dest: Path) -> Path:
    return dest.with_name(f".old-{dest.name}")


def recover(dest: Path) -> None:
    """Finish or undo a swap a kill interrupted: the old artifact comes back if no new one
    took its place; a leftover old copy beside a complete new one is removed."""
    dest, old = Path(dest), _old(Path(dest))
    if old.is_dir() and not old.is_symlink():
        if os.path.lexists(dest):
            discard(dest.parent, old.name)
        else:
            OutDir(dest.parent).rename(old.name, dest.name)


def _files(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def tmp_path(dest: Path) -> Path:
    """Where the next artifact for ``dest`` is written before it is swapped in."""
    return Path(dest).with_name(f".tmp-{Path(dest).name}")


def prepare(dest: Path) -> Path:
    """A fresh temporary folder beside ``dest`` for a new artifact (see ``saving``)."""
    dest = Path(dest)
    # the folder it goes in (state/, checkpoints/, a stage's) is always below the --out the
    # user named, never a root that may be a link: a link planted there is one line too
    check_real_folder(dest.parent)
    out = OutDir(dest.parent)
    out.check_not_link(dest.name)  # a link planted at the artifact's name: one line
    recover(dest)
    tmp = out.fresh_folder(tmp_path(dest).name)  # a library writes into it: never a link
    on_phase("prepared")
    return tmp


def finish(tmp: Path, dest: Path, kind: str, meta: dict[str, Any] | None = None) -> Path:
    """Write the manifest of the complete folder ``tmp``, fsync it and swap it in at ``dest``."""
    if kind not in KINDS:
        raise ValueError(f"artifact kind {quote(kind)} is not one of {', '.join(KINDS)}")
    on_phase("written")
    manifest = {
        "schema": SCHEMA,
        "kind": kind,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": _files(tmp),
        "meta": meta or {},
    }
    OutDir(tmp).write_text(MANIFEST, json.dumps(manifest, indent=2, default=str))
    fsync_tree(tmp)
    on_phase("fsynced")
    commit(tmp, Path(dest))
    return Path(dest)


@contextmanager
def refusing(dest: Path, kind: str, tmp: Path | None = None) -> Iterator[None]:
    """A library (save_pretrained, safetensors, accelerate's save_state and its torch.save)
    writing into a full or read-only folder raises its own type: one ArtifactError line
    naming the artifact and the OS reason instead (``tmp``, when given, is removed)."""
    try:
        yield
    except BaseException as exc:
        if tmp is not None:
            discard(tmp.parent, tmp.name)
        ours = isinstance(exc, DataError | KeyboardInterrupt)  # already one line / the user
        reason = None if ours else os_reason(exc, dest.parent)
        if reason is not None:
            raise ArtifactError(
                f"{dest}: cannot save the {kind} ({reason}); the previous one, if any, is kept"
            ) from None
        raise


@contextmanager
def saving(dest: Path, kind: str, meta: dict[str, Any] | None = None) -> Iterator[Path]:
    """Write an artifact of ``kind`` at ``dest`` atomically; the body writes into the yielded
    temporary folder. An exception in the body leaves ``dest`` as it was."""
    if kind not in KINDS:
        raise ValueError(f"artifact kind {quote(kind)} is not one of {', '.join(KINDS)}")
    tmp = prepare(dest)
    with refusing(dest, kind, tmp):
        yield tmp
        finish(tmp, dest, kind, meta)


def commit(tmp: Path, dest: Path) -> None:
    """Swap the complete folder ``tmp`` in at ``dest`` (see the module docstring)."""
    old, out = _old(dest), OutDir(dest.parent)
    if os.path.lexists(dest):
        discard(dest.parent, old.name)
        out.rename(dest.name, old.name)
        on_phase("old_moved")
    out.rename(tmp.name, dest.name)
    _fsync_dir(dest.parent)
    on_phase("new_moved")
    discard(dest.parent, old.name)


def read_manifest(folder: Path, kind: str | None = None) -> dict[str, Any]:
    """The manifest of a complete artifact (of ``kind`` when given), or one ArtifactError line."""
    folder = Path(folder)
    recover(folder)
    path = folder / MANIFEST
    if not path.exists() and not path.is_symlink():
        raise ArtifactError(f"{folder}: not a cppo-bench artifact (no {MANIFEST})")
    try:  # the one reader: a FIFO or device planted as the manifest is one line, not a hang
        with userfiles.open_bytes(path, MAX_MANIFEST_BYTES) as fh:
            raw = jsonio.read_capped(fh, MAX_MANIFEST_BYTES)
        data = jsonio.loads(raw) if raw is not None else None
    except userfiles.UserFileError as exc:
        raise ArtifactError(str(exc)) from None
    except (OSError, ValueError):
        raise ArtifactError(f"{path}: unreadable artifact manifest") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"{path}: not an artifact manifest")
    if data.get("schema") != SCHEMA:
        raise ArtifactError(
            f"{path}: schema {quote(str(data.get('schema'))[:40])}, expected {SCHEMA}"
        )
    if kind is not None and data.get("kind") != kind:
        raise ArtifactError(
            f"{folder}: a {quote(str(data.get('kind'))[:40])} artifact, not a {kind}"
        )
    files = data.get("files")
    if not isinstance(files, dict):
        raise ArtifactError(f"{path}: no file list")
    try:
        for name, size in files.items():
            # a name read from a file: resolved (links, `..`) inside the artifact, or refused
            f = userfiles.inside(folder, name, "artifact file")
            if not f.is_file() or f.stat().st_size != size:
                raise ArtifactError(f"{folder}: {str(name)[:80]} is missing or has the wrong size")
        # a loader (accelerate, DeepSpeed, transformers) opens more than the list: every
        # entry of the folder is a listed regular file (an unlisted FIFO hung a resume)
        userfiles.check_folder(folder, {*map(str, files), MANIFEST})
    except userfiles.UserFileError as exc:
        raise ArtifactError(str(exc)) from None
    return data


def is_artifact(folder: Path, kind: str | None = None) -> bool:
    try:
        read_manifest(folder, kind)
    except ArtifactError:
        return False
    return True


def save_tensors(path: Path, tensors: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(path))


def load_tensors(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types for a bad header
        raise ArtifactError(f"{path}: not a safetensors file ({type(exc).__name__})") from None


@contextmanager
def quiet() -> Iterator[None]:
    """No library chatter while saving: accelerate warns that tied weights are stored once
    (expected: they are tied again on load) and transformers draws a progress bar per shard."""
    from trainers.harness import quiet_loading

    log = logging.getLogger("accelerate")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with quiet_loading():
            yield
    finally:
        log.setLevel(level)


def save_pretrained(model: Any, folder: Path, state_dict: dict[str, Any] | None = None) -> None:
    """``model.save_pretrained`` as a checkpoint of the class it is: a composite (Qwen3.5,
    Gemma 4) policy is its text model, loaded with ``model.language_model.*`` renamed to
    ``model.*`` (``hf_load.TEXT_PREFIX``), and transformers >= 5 would by default save the
    names back in that loading layout beside the *text* config it writes; Gemma4ForCausalLM
    then finds none of its weights (Qwen3.5's class happens to map them). Native names give
    a text checkpoint that ``AutoModelForCausalLM``, the hf backend and vLLM's text class
    all load."""
    import inspect

    kwargs: dict[str, Any] = {"safe_serialization": True}
    if state_dict is not None:
        kwargs["state_dict"] = state_dict
    if "save_original_format" in inspect.signature(model.save_pretrained).parameters:
        kwargs["save_original_format"] = False
    with quiet():
        model.save_pretrained(folder, **kwargs)
