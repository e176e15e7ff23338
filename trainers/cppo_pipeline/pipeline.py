"""The five CPPO stages in order, by name: sft, rm, warmup, audit, joint."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from trainers.cppo_pipeline import ranks, rm_base
from trainers.cppo_pipeline.stage_data import PipelineInputs, stage_rm, stage_sft
from trainers.cppo_pipeline.stage_rl import stage_audit, stage_joint, stage_warmup
from trainers.cppo_pipeline.stages import (
    STAGES,
    StageContext,
    StageFn,
    StageResult,
    is_complete,
    run_stages,
)
from trainers.engine.layers import ConfigError
from trainers.harness import Problem, quote

STAGE_FNS: dict[str, Callable[..., object]] = {
    "sft": stage_sft,
    "rm": stage_rm,
    "warmup": stage_warmup,
    "audit": stage_audit,
    "joint": stage_joint,
}
assert tuple(STAGE_FNS) == STAGES  # pipeline order is the study's


def select_problems(problems: list[Problem], ids: Sequence[str] | None) -> list[Problem]:
    """The training pool restricted to ``ids``, in that order (``None``: every problem)."""
    if not ids:
        return problems
    by_id = {p.problem_id: p for p in problems}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ConfigError(f"config problem_ids: {quote(missing[0])} is not in the training set")
    return [by_id[i] for i in ids]


def parse_stages(spec: str) -> list[str]:
    """``--stages sft,rm`` -> ["sft", "rm"]; an unknown name is one line naming the known."""
    selected = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in selected if s not in STAGES]
    if unknown or not selected:
        raise ConfigError(
            f"--stages: unknown stage {quote(unknown[:1] or spec)}; known: {', '.join(STAGES)}"
        )
    return selected


def _at_precision(stage: StageFn, precision: str) -> StageFn:
    """``stage`` run at the engine section's fp32 matmul precision (TF32 under "high"). Set
    at each stage's start: SFT, the RM and the audit build no engine, which is where an
    engine run sets it, so they ran at whatever the process had (torch's "highest")."""

    @functools.wraps(stage)
    def run(ctx: StageContext) -> StageResult:
        import torch

        torch.set_float32_matmul_precision(precision)
        return stage(ctx)

    return run


def run_pipeline(
    out: Path,
    inputs: PipelineInputs,
    selected: Sequence[str] = STAGES,
    echo: Callable[[str], None] = print,
    progress: bool = False,
) -> dict[str, str]:
    precision = inputs.config.engine.matmul_precision
    stages: dict[str, StageFn] = {  # every stage goes through here
        name: _at_precision(functools.partial(fn, inp=inputs), precision)  # type: ignore[arg-type]
        for name, fn in STAGE_FNS.items()
    }
    record = {
        "settings": dataclasses.asdict(inputs.config),
        "judge": inputs.judge.name,
        "model": inputs.model,
        "source": inputs.source,
        "rm_model": inputs.rm_model,
        "seed": inputs.seed,
    }
    config = {name: record for name in STAGES}
    ranks.configure(inputs.config.engine.dist_timeout_s)  # before the process group exists
    _check_rm_base(out, inputs, selected)
    return run_stages(out, stages, selected, config, echo=echo, progress=progress)


def _check_rm_base(out: Path, inputs: PipelineInputs, selected: Sequence[str]) -> None:
    """Before any stage: the rm stage's base model loads on the main process (which runs
    it), else every process stops with the same line (rm_base.problem)."""
    c = inputs.config.rm
    if "rm" not in selected or c.kind != "generative":
        return
    import torch

    base = rm_base.resolve(inputs.rm_model, c, torch.cuda.is_available())
    missing = ranks.from_main(lambda: None if is_complete(out / "rm") else rm_base.problem(base))
    if missing:
        raise ConfigError(missing)
