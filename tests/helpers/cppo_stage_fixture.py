"""A pipeline folder whose early stages are already complete, on a tiny random Llama, so the
stage tests run the real stage code in seconds. Also runnable as a script (the SIGKILL test):
``python -m tests.helpers.cppo_stage_fixture DIR STAGES``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.helpers.cppo_tiny import METHODS, problems
from tests.helpers.train_helpers import tiny_model_dir
from trainers.core.gate_metrics import GateMetrics
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.config import CPPOPipelineConfig
from trainers.cppo_pipeline.judge import RulesJudge
from trainers.cppo_pipeline.negatives import LabelledTuple, make_negatives
from trainers.cppo_pipeline.stage_data import PipelineInputs
from trainers.cppo_pipeline.stages import StageContext, StageResult, write_manifest
from trainers.engine import artifacts
from trainers.engine.layers import build

TINY_ENGINE = {
    "prompts_per_step": 2,
    "max_tokens": 12,
    "micro_batch_rows": 8,
    "rollout_batch": 16,
    "lr": 1e-3,
    "save_every": 1,
    "kl_beta": 0.0,
    "verify_workers": 2,
}


def settings(**over: object) -> CPPOPipelineConfig:
    s: dict = {
        "k": 2,
        "m": 2,
        "planner_max_tokens": 12,
        "rm": {"kind": "ngram", "epochs": 5, "lr": 1e-2},
        "engine": dict(TINY_ENGINE),
        "warmup": {"max_steps": 2},
        "audit": {"problems": 2},
        "joint": {"phases": 2, "max_steps": 4, "refresh_problems": 2},
    }
    for k, v in over.items():
        if isinstance(v, dict):
            s[k] = {**s.get(k, {}), **v}
        else:
            s[k] = v
    return build(CPPOPipelineConfig, s)


def _complete(out: Path, stage: str, arts: tuple[str, ...], outputs: dict[str, str]) -> None:
    ctx = StageContext(stage, out / stage, {}, {})
    write_manifest(ctx, "complete", StageResult(arts, {"fixture": True}, outputs))


def prepared(tmp: Path, upto: str = "audit") -> tuple[Path, PipelineInputs]:
    """DIR with sft, rm (and warmup, audit when asked) complete on the tiny model."""
    model = tiny_model_dir(tmp / "tiny")
    out = tmp / "pipe"
    ps = problems()
    (out / "sft").mkdir(parents=True, exist_ok=True)
    planner = out / "sft" / "planner"
    with artifacts.saving(planner, "planner") as tmp_planner:
        shutil.copytree(model, tmp_planner, dirs_exist_ok=True)
    with (out / "sft" / "sft_set.jsonl").open("w") as fh:
        for p in ps:
            fh.write(
                json.dumps(
                    {
                        "problem_id": p.problem_id,
                        "methods": METHODS[p.problem_id][:2],
                        "target": "",
                        "judge": "rules",
                    }
                )
                + "\n"
            )
    _complete(out, "sft", ("sft_set.jsonl", "planner/artifact.json"), {"planner": str(planner)})
    inputs = PipelineInputs(ps, "tiny", str(model), RulesJudge(), settings())
    if upto == "sft":
        return out, inputs
    cfg = rmod.RMConfig(kind="ngram", epochs=5, lr=1e-2)
    rm = rmod.RM_KINDS.get("ngram").create(cfg)
    pos = [LabelledTuple(p, tuple(METHODS[p.problem_id][:2]), 1, "judge:rules") for p in ps]
    pool = pos + make_negatives(pos)
    rmod.fit(rm, pool, cfg)
    # a fixture RM recorded as accepted: the stage tests are about what comes after stage 2
    ok = GateMetrics(0.9, 0.8, 0.8, 0.8, cfg.tau, 8, 8)
    rmod.save(rm, out / "rm" / "reward_model", ok, cfg, pool)
    rm_dir = str(out / "rm" / "reward_model")
    _complete(out, "rm", ("reward_model/artifact.json",), {"reward_model": rm_dir})
    if upto == "rm":
        return out, inputs
    if upto in ("warmup", "audit"):
        _complete(out, "warmup", (), {"policy": str(model)})
    if upto == "audit":
        _complete(out, "audit", (), {"policy": str(model)})
    return out, inputs


def kill_after_refresh() -> None:
    """SIGKILL this process right after the first RM refresh has written its folder, before
    the stage records it: the worst moment of a refresh for a resume. (The tiny RM rarely
    passes the real acceptance rule; this one is let through so that a folder is written.)"""
    import os
    import signal

    from trainers.core.gate_metrics import AcceptanceRule
    from trainers.cppo_pipeline import stage_rl

    real = stage_rl.refresh

    def refresh_then_die(*args: object, **kwargs: object) -> object:
        try:
            real(*args, rule=AcceptanceRule(0.0, 0.0, 0.0, 0.0), **kwargs)  # type: ignore[arg-type]
        finally:
            os.kill(os.getpid(), signal.SIGKILL)

    stage_rl.refresh = refresh_then_die  # type: ignore[assignment]


if __name__ == "__main__":  # the SIGKILL tests' child process
    from trainers.cppo_pipeline.pipeline import run_pipeline

    if "--kill-in-refresh" in sys.argv:
        sys.argv.remove("--kill-in-refresh")
        kill_after_refresh()

    tmp, stages = Path(sys.argv[1]), sys.argv[2].split(",")
    out, inputs = prepared(tmp) if not (tmp / "pipe").exists() else (tmp / "pipe", None)
    if inputs is None:
        inputs = PipelineInputs(problems(), "tiny", str(tmp / "tiny"), RulesJudge(), settings())
    print(json.dumps(run_pipeline(out, inputs, stages, echo=lambda s: None)))
