"""The five CPPO stages in order, by name: sft, rm, warmup, audit, joint."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from trainers.cppo_pipeline.settings import take
from trainers.cppo_pipeline.stage_data import RM_KEYS, SFT_KEYS, PipelineInputs, stage_rm, stage_sft
from trainers.cppo_pipeline.stage_rl import (
    AUDIT_KEYS,
    JOINT_KEYS,
    PLATEAU_KEYS,
    stage_audit,
    stage_joint,
    stage_warmup,
)
from trainers.cppo_pipeline.stages import STAGES, StageFn, run_stages

STAGE_FNS: dict[str, Callable[..., object]] = {
    "sft": stage_sft,
    "rm": stage_rm,
    "warmup": stage_warmup,
    "audit": stage_audit,
    "joint": stage_joint,
}
assert tuple(STAGE_FNS) == STAGES  # pipeline order is the study's


def validate_settings(settings: dict) -> None:
    """Every key of every stage, checked before any stage runs (one line naming a bad one)."""
    from trainers.cppo import CPPOAlgoConfig
    from trainers.cppo_pipeline.rewards import ablation
    from trainers.engine.config import build_configs

    take(settings["sft"], SFT_KEYS, "sft")
    take(settings["rm"], RM_KEYS, "rm")
    take(settings["audit"], AUDIT_KEYS, "audit")
    ablation(str(settings["ablation"]))
    algo = {"k": settings["k"], "m": settings["m"], "ablation": settings["ablation"]}
    for name, own in (("warmup", PLATEAU_KEYS), ("joint", JOINT_KEYS)):
        rest = {k: v for k, v in settings[name].items() if k not in own}
        build_configs(CPPOAlgoConfig, [settings["engine"], rest, algo])


def run_pipeline(
    out: Path,
    inputs: PipelineInputs,
    selected: Sequence[str] = STAGES,
    echo: Callable[[str], None] = print,
) -> dict[str, str]:
    stages: dict[str, StageFn] = {
        name: functools.partial(fn, inp=inputs)  # type: ignore[misc]
        for name, fn in STAGE_FNS.items()
    }
    config = {
        name: {
            "settings": inputs.settings,
            "judge": inputs.judge.name,
            "model": inputs.model,
            "source": inputs.source,
            "rm_model": inputs.rm_model,
        }
        for name in STAGES
    }
    return run_stages(out, stages, selected, config, echo=echo)
