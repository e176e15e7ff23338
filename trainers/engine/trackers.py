"""Experiment trackers a training run can also log to (`--report-to`), by name.

Each entry names the module it needs and how to get it; the module is imported only when a
run asks for it, so a missing one is one line naming the install command, before any model
loads. The metrics.jsonl log and the per-step log lines are always written whatever this says.

wandb without a network: `WANDB_MODE=offline` keeps the run under the output folder
(`wandb sync` uploads it later). With no API key and no WANDB_MODE set, the run goes offline
by itself (a note says so) rather than stopping at a login prompt on a cluster node.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from trainers.harness import DataError, Registry, env

PROJECT = "cppo-bench-train"  # the tracker project name; tensorboard's folder under --out


@dataclass(frozen=True)
class Tracker:
    module: str  # what must import for it
    install: str  # how to get it
    folder: str = ""  # the folder under --out the library writes itself (made real first)


TRACKERS: Registry[Tracker] = Registry("tracker")
TRACKERS.register("none")(Tracker("", ""))
TRACKERS.register("tensorboard")(
    Tracker("tensorboard", "pip install 'cppo-bench[tensorboard]'", PROJECT)
)
TRACKERS.register("wandb")(Tracker("wandb", "pip install wandb", "wandb"))


def tracker_folder(name: str, out_dir: Path) -> None:
    """The folder tracker `name` writes under ``out_dir``, made through the one writer: a
    link planted there (a stranger's run folder on --resume) is one line, never followed.
    Kept when it is a real folder: a resumed run adds to its logs."""
    from trainers.harness import OutDir

    folder = TRACKERS.get(name).folder
    if folder:
        OutDir(out_dir).folder(folder)


def check_tracker(name: str, out_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """Raise DataError (one line) if tracker `name` cannot be used here; return accelerate's
    init_kwargs for it (wandb: its files under `out_dir`, offline when it has no key)."""
    tracker = TRACKERS.get(name)
    if tracker.module and importlib.util.find_spec(tracker.module) is None:
        raise DataError(f"report_to {name} needs the {tracker.module} package: {tracker.install}")
    if name != "wandb":
        return {}
    if not env.raw("WANDB_MODE") and not env.raw("WANDB_API_KEY"):
        os.environ["WANDB_MODE"] = "offline"
        from trainers.harness import echo

        echo(
            "note: wandb has no WANDB_API_KEY here: logging offline (WANDB_MODE=offline); "
            "upload later with `wandb sync`",
            err=True,
        )
    return {"wandb": {"dir": str(out_dir)}} if out_dir is not None else {}
