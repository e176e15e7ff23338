"""The one front door of training: ``train(algo, ...)``; `cppo-bench train ALGO` calls it.

Resolves the config (dataclass defaults <- preset files <- ``config`` file <- ``overrides``),
loads and decontaminates the training set, and runs the algorithm's recipe. Every argument
has the meaning of the CLI option of the same name (docs/training.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers.engine.layers import ConfigError, merge, read_preset
from trainers.harness import quote
from trainers.recipes import RECIPES, TrainJob, TrainOutcome, check_known, printable

PRESETS = ("auto", "study", "demo")


@dataclass(frozen=True)
class Resolved:
    """A resolved training request: its recipe, typed config and the preset that applied."""

    algo: str
    preset: str
    config: Any

    def as_dict(self) -> dict[str, Any]:
        return printable(self.config)


def model_tag(model: str | None) -> str:
    """The folder-name tag of a model (default run folders: runs/train/ALGO-TAG-seedS)."""
    if model is None:
        return "smollm2-135m"
    name = Path(model.rstrip("/")).name or model
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower() or "model"


def resolve(
    algo: str,
    *,
    config: str | Path | None = None,
    preset: str = "auto",
    model: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    base: Mapping[str, Any] | None = None,
    bench: str = "demo_train",
) -> Resolved:
    """The typed config of ``algo``: one ConfigError line for an unknown key or a bad value.
    ``preset`` auto = demo when neither ``model`` nor ``config`` is given. ``base``: a run's
    recorded config (a resume), which takes the place of the defaults and presets."""
    recipe = RECIPES.get(algo)
    if preset not in PRESETS:
        raise ConfigError(f"preset {quote(preset)} is not one of {', '.join(PRESETS)}")
    if preset == "auto":
        preset = "demo" if model is None and config is None else "study"
    values: dict[str, Any] = dict(base or {})
    for path in recipe.presets(preset, bench) if base is None else []:
        values = merge(values, read_preset(path))
    if config is not None:
        values = merge(values, read_preset(Path(config)))
    values = merge(values, dict(overrides or {}))
    return Resolved(algo, preset, recipe.build(values))


def default_out(algo: str, model: str | None, seed: int) -> Path:
    """A run's folder without --out: runs/train/ALGO-MODEL-seedS."""
    return Path("runs") / "train" / f"{algo}-{model_tag(model)}-seed{seed}"


def recorded_config(algo: str, folder: Path) -> dict[str, Any] | None:
    """The config a run's manifest records, as the base of a plain ``--resume`` (so its
    ``--set`` keys need not be repeated); keys this code no longer has are dropped. None for
    a pipeline (cppo: per-stage configs) or a folder without an engine run of ``algo``."""
    from trainers.engine.manifest import recorded

    if RECIPES.get(algo).has_stages:
        return None
    previous = recorded(folder)
    config = previous.get("config")
    if previous.get("algorithm") != algo or not isinstance(config, dict):
        return None
    known = set(resolve(algo, preset="study").as_dict())
    return {k: v for k, v in config.items() if k in known}


def train(
    algo: str,
    *,
    config: str | Path | None = None,
    preset: str = "auto",
    model: str | None = None,
    bench: str = "demo_train",
    data: str | None = None,
    split: str | None = None,
    eval_specs: Sequence[str] = (),
    allow_overlap: bool = False,
    out: str | Path | None = None,
    resume: bool = False,
    seed: int = 0,
    stages: Sequence[str] = (),
    quiet: bool = True,
    options: Mapping[str, Any] | None = None,
    echo: Callable[[str], None] = lambda line: None,
    manifest: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> TrainOutcome:
    """Train ``algo`` (cppo, pkpo, passk_rl, upskill); keyword ``overrides`` are config keys
    (nested mappings for CPPO sections: ``rm={"epochs": 3}``). Returns the final checkpoint,
    its step count and the base-model label its evaluation takes."""
    from trainers.engine import data as datamod

    recipe = RECIPES.get(algo)
    check_known(recipe, stages)
    folder = Path(out) if out is not None else default_out(algo, model, seed)
    base = recorded_config(algo, folder) if resume else None
    resolved = resolve(
        algo, config=config, preset=preset, model=model, overrides=overrides, base=base,
        bench=bench,
    )  # fmt: skip
    if base is not None:
        echo(f"--resume: the config recorded in {folder}, with this command's --config / --set")
    problems, source = datamod.load_training(bench, data, split, echo=echo)
    training = datamod.decontaminated(problems, source, list(eval_specs), allow_overlap)
    if resolved.preset == "demo":
        echo("preset demo: short CPU settings (trainers/configs); preset study for the study's")
    if training.removed:
        verb = "kept (allow_overlap)" if allow_overlap else "removed"
        echo(
            f"decontamination: {len(training.removed)} training problem(s) {verb}; "
            "listed in the manifest"
        )
    job = TrainJob(
        algo,
        resolved.config,
        training,
        folder,
        model,
        seed,
        resume,
        quiet,
        tuple(stages),
        dict(options or {}),
        {"allow_overlap": allow_overlap, "preset": resolved.preset, **dict(manifest or {})},
    )
    try:
        return recipe.run(job, echo)
    except KeyboardInterrupt:  # say what was kept and how to resume, then stop as before
        from trainers.engine import interrupt

        argv = (manifest or {}).get("argv")
        interrupt.report(folder, list(argv) if argv else None, echo)
        raise
