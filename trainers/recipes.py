"""What `cppo-bench train ALGO` can train, registered by name: one recipe per algorithm.

A recipe knows its typed config (the study's defaults as frozen dataclasses), which preset
files apply, how to run, and which evaluation method reads its checkpoint. The engine
algorithms (pkpo, passk_rl, upskill) are one engine run each; cppo is the five-stage pipeline,
whose warm-up and joint stages are engine runs too. The front door (trainers.api.train, and the
CLI over it) is the same for all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.engine.layers import CONFIG_DIR, ConfigError
from trainers.harness import STAGES, DataError, Registry


@dataclass(frozen=True)
class TrainJob:
    """Everything a recipe's run needs, resolved by the front door."""

    algo: str
    config: Any  # the recipe's typed config
    training: Any  # trainers.engine.data.TrainingSet
    out: Path
    model: str | None = None  # None: the embedded default model
    seed: int = 0
    resume: bool = False
    quiet: bool = False
    stages: tuple[str, ...] = ()  # for recipes with stages; () = all
    options: dict[str, Any] = field(default_factory=dict)  # recipe-specific (judge, rm model)
    manifest: dict[str, Any] = field(default_factory=dict)  # extra manifest fields (argv, preset)


@dataclass(frozen=True)
class TrainOutcome:
    checkpoint: Path | None
    steps: int
    base_model: str  # the label runs record, so report columns never split
    eval_method: str
    stopped: str | None = None


@dataclass(frozen=True)
class Recipe:
    name: str
    eval_method: str  # the `cppo-bench run --method` that evaluates its checkpoints
    # (preset name, training benchmark) -> preset files, in order
    presets: Callable[[str, str], list[Path]]
    build: Callable[[dict[str, Any]], Any]  # merged layers -> typed config
    run: Callable[[TrainJob, Callable[[str], None]], TrainOutcome]
    has_stages: bool = False


def engine_recipe(algo: str, eval_method: str) -> Recipe:
    """The recipe of an algorithm the shared engine trains (registered in ALGORITHMS as
    ``algo``): its ``demo`` preset files, its typed config, and a run whose checkpoints
    ``cppo-bench run --method eval_method`` evaluates. Register it in RECIPES by name to get
    ``cppo-bench train ALGO`` (docs/extending.md, "A trainer")."""

    def presets(preset: str, bench: str = "") -> list[Path]:
        if preset != "demo":
            return []
        # the algorithm's own demo keys, then the training set's (demo_train.demo.yaml)
        files = [CONFIG_DIR / "demo.yaml", CONFIG_DIR / f"{algo}.demo.yaml"]
        if bench.replace("_", "").isalnum():  # a benchmark's name, never a path
            files.append(CONFIG_DIR / f"{bench}.demo.yaml")
        return [f for f in files if f.is_file()]

    def build(values: dict[str, Any]) -> Any:
        from trainers.algorithms import ALGORITHMS
        from trainers.engine.config import build_flat

        return build_flat(ALGORITHMS.get(algo).Config, values)

    def run(job: TrainJob, echo: Callable[[str], None]) -> TrainOutcome:
        from trainers.algorithms import ALGORITHMS
        from trainers.cppo_pipeline.pipeline import select_problems
        from trainers.engine.loop import RunSpec, train
        from trainers.engine.manifest import recorded

        engine_cfg, algo_cfg = job.config
        chosen = select_problems(job.training.problems, engine_cfg.problem_ids or None)
        training = dataclasses.replace(job.training, problems=chosen)
        if not job.resume and recorded(job.out):  # stopped before its first state: still a run
            raise DataError(
                f"{job.out} already holds a training run: pass --resume, or another --out"
            )
        spec = RunSpec(
            algorithm=ALGORITHMS.get(algo)(algo_cfg),
            config=engine_cfg,
            training=training,
            out_dir=job.out,
            model=job.model,
            seed=job.seed,
            resume=job.resume,
            progress=not job.quiet,
            extra_manifest=dict(job.manifest),
        )
        result = train(spec)
        return TrainOutcome(
            result.checkpoint, result.steps, result.base_model, eval_method, result.stopped
        )

    return Recipe(algo, eval_method, presets, build, run)


def _cppo_recipe() -> Recipe:
    def presets(preset: str, bench: str = "") -> list[Path]:
        return [CONFIG_DIR / "cppo.demo.yaml"] if preset == "demo" else []

    def build(values: dict[str, Any]) -> Any:
        from trainers.cppo_pipeline.config import CPPOPipelineConfig
        from trainers.engine.layers import build as build_typed

        return build_typed(CPPOPipelineConfig, values)

    def run(job: TrainJob, echo: Callable[[str], None]) -> TrainOutcome:
        from trainers.cppo_pipeline.judge import make_judge
        from trainers.cppo_pipeline.pipeline import run_pipeline, select_problems
        from trainers.cppo_pipeline.stage_data import PipelineInputs
        from trainers.cppo_pipeline.stages import read_manifest, stage_output
        from trainers.engine.loop import model_label

        cfg = job.config
        started = [s for s in STAGES if read_manifest(job.out / s) is not None]
        if started and not job.resume:
            raise DataError(
                f"{job.out} already holds a CPPO pipeline (stages {', '.join(started)}): "
                "pass --resume, or another --out"
            )
        pool = select_problems(job.training.problems, cfg.problem_ids)
        from trainers.cppo_pipeline import ranks

        ranks.configure(cfg.engine.dist_timeout_s)  # the judge's device makes the group
        inputs = PipelineInputs(
            pool,
            job.training.source,
            job.model,
            make_judge(job.options.get("judge"), job.options.get("base_url")),
            cfg,
            job.options.get("rm_model"),
            job.training.removed,
            job.training.eval_sets,
            job.seed,
        )
        run_pipeline(job.out, inputs, job.stages or STAGES, echo, progress=not job.quiet)
        joint = read_manifest(job.out / "joint") or {}
        final = stage_output(job.out / "joint", "policy")
        steps = int((joint.get("summary") or {}).get("steps") or 0)
        return TrainOutcome(Path(final) if final else None, steps, model_label(job.model), "cppo")

    return Recipe("cppo", "cppo", presets, build, run, has_stages=True)


RECIPES: Registry[Recipe] = Registry("training algorithm")
for _recipe in (
    _cppo_recipe(),
    engine_recipe("pkpo", "direct"),
    engine_recipe("passk_rl", "direct"),
    engine_recipe("upskill", "skills"),  # UpSkill samples one program per skill prefix
):
    RECIPES.register(_recipe.name)(_recipe)


def printable(config: Any) -> dict[str, Any]:
    """The resolved config as one mapping (flat for engine algorithms, nested for cppo)."""
    if isinstance(config, tuple):
        return {k: v for part in config for k, v in dataclasses.asdict(part).items()}
    return dataclasses.asdict(config)


def check_known(recipe: Recipe, stages: Sequence[str]) -> None:
    if stages and not recipe.has_stages:
        raise ConfigError(f"--stages: {recipe.name} has no stages (only cppo does)")


__all__ = [
    "RECIPES",
    "Recipe",
    "TrainJob",
    "TrainOutcome",
    "check_known",
    "printable",
]
