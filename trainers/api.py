"""The one front door of training: ``train(algo, ...)``; `cppo-bench train ALGO` calls it.

Resolves the config (dataclass defaults <- preset files <- ``config`` file <- ``overrides``),
loads and decontaminates the training set, and runs the algorithm's recipe. Every argument
has the meaning of the CLI option of the same name (docs/training.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers.engine.layers import ConfigError, merge, read_preset
from trainers.harness import DataError, UserError, build_config, quote
from trainers.recipes import RECIPES, TrainJob, TrainOutcome, check_known, printable
from trainers.request import TrainRequest

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
    ``--set`` keys need not be repeated); keys this code no longer has are dropped. For a
    pipeline (cppo): the settings its latest recorded stage ran with. None for a folder
    without a run of ``algo``."""
    from trainers.engine.manifest import recorded

    if RECIPES.get(algo).has_stages:
        return _pipeline_settings(folder)
    previous = recorded(folder)
    config = previous.get("config")
    if previous.get("algorithm") != algo or not isinstance(config, dict):
        return None
    known = set(resolve(algo, preset="study").as_dict())
    return {k: v for k, v in config.items() if k in known}


def _pipeline_settings(folder: Path) -> dict[str, Any] | None:
    """The settings a CPPO pipeline's stages recorded (every stage records all of them; the
    latest stage run is the one a resume continues)."""
    from trainers.cppo_pipeline.stages import read_manifest
    from trainers.harness import STAGES

    for stage in reversed(STAGES):
        config = (read_manifest(folder / stage) or {}).get("stage_config") or {}
        settings = config.get("settings") if isinstance(config, dict) else None
        if isinstance(settings, dict):
            return settings
    return None


def train(
    algo: str | TrainRequest,
    *,
    echo: Callable[[str], None] = lambda line: None,
    manifest: Mapping[str, Any] | None = None,
    **settings: Any,
) -> TrainOutcome:
    """Train ``algo`` (cppo, pkpo, passk_rl, upskill): give a TrainRequest, or its fields as
    keywords (``config``, ``preset``, ``model``, ``bench``, ``data``, ``split``,
    ``eval_specs``, ``allow_overlap``, ``out``, ``resume``, ``seed``, ``stages``, ``quiet``,
    ``options``); any other keyword is a config key (nested mappings for CPPO sections:
    ``rm={"epochs": 3}``), as ``overrides`` holds them. Returns the final checkpoint, its step
    count and the base-model label its evaluation takes. ``echo`` hears the lines worth
    saying; ``manifest``: extra fields for the run's manifest (the command line)."""
    request = algo if isinstance(algo, TrainRequest) else request_of(algo, settings)
    if isinstance(algo, TrainRequest) and settings:
        raise ConfigError("train: give a TrainRequest or settings, not both")
    try:
        return _train(request, echo, dict(manifest or {}))
    except ValueError as exc:  # from deep inside: the user's input, as its one line (edge)
        if isinstance(exc, UserError):
            raise
        raise DataError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def request_of(algo: str, settings: Mapping[str, Any]) -> TrainRequest:
    """The TrainRequest of ``train``'s keywords: its fields by name, the rest config keys."""
    fields = set(TrainRequest.__dataclass_fields__) - {"algo", "overrides"}
    values = {k: v for k, v in settings.items() if k in fields}
    overrides = {k: v for k, v in settings.items() if k not in fields}
    if "overrides" in settings:
        overrides = merge(dict(settings["overrides"] or {}), overrides)
    request: TrainRequest = build_config(
        TrainRequest, {"algo": algo, **values, "overrides": overrides}
    )
    return request


def folder_of(request: TrainRequest) -> Path:
    return (
        Path(request.out)
        if request.out is not None
        else default_out(request.algo, request.model, request.seed)
    )


def resolved(request: TrainRequest) -> Resolved:
    """The config the request's run will use (a plain --resume: the one its folder records,
    with this request's --config / --set over it)."""
    base = recorded_config(request.algo, folder_of(request)) if request.resume else None
    return resolve(
        request.algo, config=request.config, preset=request.preset, model=request.model,
        overrides=request.overrides, base=base, bench=request.bench,
    )  # fmt: skip


def check(request: TrainRequest) -> tuple[Any, int | None]:
    """The preflight's plan of the request's run (stages, layouts, per-GPU memory against
    the card) and the card's memory; ``plan.problems`` refuse the run (trainers.preflight)."""
    from trainers.preflight import preflight

    options = {k: v for k, v in request.options.items() if k in ("rm_model", "judge")}
    return preflight(request.algo, resolved(request).config, request.model, options,
                     folder_of(request), request.gpu_memory, list(request.stages))  # fmt: skip


def _train(
    request: TrainRequest, echo: Callable[[str], None], manifest: dict[str, Any]
) -> TrainOutcome:
    from trainers.engine import data as datamod

    r = request
    recipe = RECIPES.get(r.algo)
    check_known(recipe, r.stages)
    folder = folder_of(r)
    config = resolved(r)
    if r.resume and recorded_config(r.algo, folder) is not None:
        echo(f"--resume: the config recorded in {folder}, with this command's --config / --set")
    problems, source = datamod.load_training(r.bench, r.data, r.split, echo=echo)
    training = datamod.decontaminated(problems, source, list(r.eval_specs), r.allow_overlap)
    if config.preset == "demo":
        echo("preset demo: short CPU settings (trainers/configs); preset study for the study's")
    if training.removed:
        verb = "kept (allow_overlap)" if r.allow_overlap else "removed"
        echo(
            f"decontamination: {len(training.removed)} training problem(s) {verb}; "
            "listed in the manifest"
        )
    job = TrainJob(
        r.algo,
        config.config,
        training,
        folder,
        r.model,
        r.seed,
        r.resume,
        r.quiet,
        tuple(r.stages),
        dict(r.options),
        {"allow_overlap": r.allow_overlap, "preset": config.preset, **manifest},
    )
    try:
        return recipe.run(job, echo)
    except KeyboardInterrupt:  # say what was kept and how to resume, then stop as before
        from trainers.engine import interrupt

        argv = manifest.get("argv")
        interrupt.report(folder, list(argv) if argv else None, echo)
        raise
