"""What an interrupted training run (Ctrl-C) kept, and the command that resumes it.

The step being trained is lost; the last complete state (``state/LATEST``) is what a
``--resume`` starts from. A state or checkpoint folder being written when the interrupt
came is a ``.tmp-*`` folder (trainers.engine.artifacts) that nothing will finish: removed
here, so the run folder holds only complete artifacts.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from trainers.engine import checkpoint
from trainers.harness import DataError, OutDir

STATE_FOLDERS = (checkpoint.STATE_DIR, checkpoint.HF_DIR)


def resume_command(argv: Sequence[str], out: Path) -> str:
    """The `cppo-bench` command line that resumes: the same one, with --resume and --out."""
    args = list(argv)
    if "--resume" not in args:
        args.append("--resume")
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out)]
    return "cppo-bench " + shlex.join(args)


def clean_partial(out: Path) -> list[Path]:
    """Remove the ``.tmp-*`` folders an interrupted save left under ``out`` (any stage)."""
    removed = []
    for folder in sorted(Path(out).rglob(".tmp-*")):
        if folder.parent.name in STATE_FOLDERS and folder.is_dir() and not folder.is_symlink():
            # through the writer from ``out`` down: a linked folder on the way is not entered
            try:
                OutDir(out).clear(folder.relative_to(out))
            except (OSError, DataError):
                continue
            removed.append(folder)
    return removed


def kept_step(out: Path) -> tuple[int, Path] | None:
    """The newest complete state under ``out`` (a CPPO run has one per stage): (step, folder)."""
    best: tuple[float, int, Path] | None = None
    for pointer in Path(out).rglob(f"{checkpoint.STATE_DIR}/{checkpoint.LATEST}"):
        try:
            folder = checkpoint.latest_state(pointer.parent.parent)
        except (DataError, OSError):
            continue
        if folder is None:
            continue
        step = int(folder.name.removeprefix("step-"))
        when = folder.stat().st_mtime
        if best is None or when > best[0]:
            best = (when, step, folder)
    return None if best is None else (best[1], best[2])


def lost_before_first_state(out: Path) -> str:
    """What a Ctrl-C before the run's first state save lost, and why: the steps trained so
    far (its metrics.jsonl lines) are not resumable, as a state is written every
    `state_every` steps (the manifest's config), not after each one."""
    from trainers.harness import read_manifest, read_metrics

    try:
        steps = len(read_metrics(out))
        config = (read_manifest(Path(out)) or {}).get("config") or {}
    except (DataError, OSError):
        steps, config = 0, {}
    every = config.get("state_every") if isinstance(config, dict) else None
    if not steps:
        return f"interrupted before the first step was trained: nothing kept in {out}"
    why = (
        f"a state is saved every {every} steps (state_every), the first after step {every}"
        if isinstance(every, int)
        else "no state had been saved yet"
    )
    return (
        f"interrupted before the first state save: {steps} trained step(s) lost ({why}); "
        f"nothing to resume in {out}; a lower --set state_every=N keeps more, at the cost "
        "of a save every N steps"
    )


def report(out: Path, argv: Sequence[str] | None, echo: Callable[[str], None]) -> None:
    """Say what the interrupted run kept and how to resume it; tidy its partial folders."""
    for folder in clean_partial(out):
        echo(f"removed the unfinished {folder}")
    kept = kept_step(out)
    if kept is None:
        echo(lost_before_first_state(out))
        return
    step, folder = kept
    echo(f"interrupted: step {step} is kept ({folder}); the step in flight is lost")
    if argv:
        echo(f"resume with: {resume_command(argv, out)}")
