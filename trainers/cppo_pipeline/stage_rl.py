"""Stages 3 (RM-guided warm-up), 4 (audit) and 5 (joint CPPO) on the shared training engine.

Warm-up and joint training are engine runs of the ``cppo`` algorithm (trainers/cppo.py) in
``DIR/<stage>/run/`` (the engine's manifest, metrics.jsonl, resumable state and HF folders), so
a SIGKILL mid-stage resumes from the engine's last state. The warmed policy's path is passed on
in ``policy.json``. Between joint phases the RM is refreshed into ``DIR/joint/rm/step-N``; a
resumed run picks up the newest refresh at or before its step.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from cppo_bench.backends.base import SamplingParams
from cppo_bench.backends.hf import load_model
from cppo_bench.problem import Problem
from trainers.cppo import CPPO, CPPOAlgoConfig
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.audit import AuditThresholds, audit
from trainers.cppo_pipeline.exposure import write_exposure
from trainers.cppo_pipeline.joint import PlateauRule
from trainers.cppo_pipeline.negatives import LabelledTuple
from trainers.cppo_pipeline.refresh import (
    read_pool,
    read_recent,
    record_refresh,
    refresh,
    refresh_records,
)
from trainers.cppo_pipeline.rewards import ablation
from trainers.cppo_pipeline.settings import take
from trainers.cppo_pipeline.stage_data import (
    CHECKPOINT,
    RM_DIR,
    RM_KEYS,
    PipelineInputs,
    judge_tuples,
    rm_config,
    subset,
)
from trainers.cppo_pipeline.stages import PipelineStop, StageContext, StageResult
from trainers.engine import checkpoint
from trainers.engine.algorithm import StepContext
from trainers.engine.config import build_configs
from trainers.engine.data import TrainingSet
from trainers.engine.rewards import REWARDS
from trainers.engine.rollout import HFRollout

POLICY = "policy.json"
RUN = "run"
GATE_LOG = "gate_log.jsonl"
REFRESH_LOG = "refresh.jsonl"
RECENT = "recent_tuples.json"  # the last step's tuples (a resumed refresh relabels them)
PLATEAU_KEYS = {"patience": 3, "min_gain": 0.02, "target": 0.98, "max_steps": 50}
JOINT_KEYS = {"phases": 3, "refresh_problems": 16}
AUDIT_KEYS = {"problems": 16, "min_pass_at_k": 0.0, "min_r_plan_density": 0.0}


class _Plateau(Exception):
    pass


def gate_fn(rm: rmod.RewardModel):
    def gate(problems: Sequence[Problem], tuples: Sequence[tuple[str, ...]]) -> torch.Tensor:
        items = [LabelledTuple(p, t, 0, "rollout") for p, t in zip(problems, tuples, strict=True)]
        return rmod.probabilities(rm, items)

    return gate


def _algorithm(
    inp: PipelineInputs, stage: str, tau: float, extra: dict[str, Any], gate_log: Path
) -> tuple[Any, CPPO]:
    s = inp.settings
    algo_keys = {
        "k": s["k"],
        "m": ablation(str(s["ablation"]), int(s["m"])).m,  # an M-sweep row fixes M
        "tau": tau,
        "stage": stage,
        "ablation": s["ablation"],
        "gate_log": str(gate_log),
    }
    engine_cfg, algo_cfg = build_configs(CPPOAlgoConfig, [s["engine"], extra, algo_keys])
    return engine_cfg, CPPO(algo_cfg)


def _policy_path(ctx: StageContext, stage: str) -> str:
    return json.loads(ctx.use(stage, POLICY).read_text())["policy"]


def _write_policy(ctx: StageContext, path: str | Path, **extra: Any) -> None:
    (ctx.folder / POLICY).write_text(json.dumps({"policy": str(path), **extra}, indent=2))


def _run(
    ctx: StageContext, inp: PipelineInputs, engine_cfg: Any, algo: CPPO, model: str, on_step: Any
) -> Path:
    from trainers.engine.loop import RunSpec, train

    out = ctx.folder / RUN
    spec = RunSpec(
        algorithm=algo,
        config=engine_cfg,
        training=TrainingSet(list(inp.problems), inp.source, inp.removed, inp.eval_sets),
        out_dir=out,
        model=model,
        resume=checkpoint.latest_state(out) is not None,
        progress=False,
        on_step=on_step,
        extra_manifest={"cppo_stage": ctx.name, "consumed": dict(ctx.consumed)},
    )
    try:
        train(spec)
    except _Plateau:
        pass
    final = out / checkpoint.HF_DIR / "final"
    if not final.exists():
        raise PipelineStop(ctx.name, f"no checkpoint under {final.parent}")
    return final.resolve()


def stage_warmup(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    sft_policy = ctx.use("sft", CHECKPOINT)
    if not ablation(inp.settings["ablation"]).warmup:
        _write_policy(ctx, sft_policy, skipped=True)
        return StageResult((POLICY,), {"skipped": "ablation no_warmup"})
    section = dict(inp.settings["warmup"])
    rule = PlateauRule(
        **take(
            {k: section.pop(k) for k in list(section) if k in PLATEAU_KEYS}, PLATEAU_KEYS, "warmup"
        )
    )
    rm, tau = rmod.load(ctx.use("rm", RM_DIR))
    # a plateau can stop any step: every step leaves an HF folder (only the newest is kept)
    extra = {**section, "max_steps": rule.max_steps, "save_every": 1, "keep_folders": 1}
    engine_cfg, algo = _algorithm(inp, "warmup", tau, extra, ctx.folder / GATE_LOG)
    algo.gate = gate_fn(rm)
    metrics_file = ctx.folder / RUN / "metrics.jsonl"
    curve = (
        [
            json.loads(line).get("j_accept_mean", 0.0)
            for line in metrics_file.read_text().splitlines()
        ]
        if metrics_file.is_file()
        else []
    )
    stopped: dict[str, str] = {}

    def on_step(done: int, metrics: dict[str, Any]) -> None:
        curve.append(float(metrics.get("j_accept_mean") or 0.0))
        ctx.log(done, {"j_accept": curve[-1]})
        reason = rule.stop(curve)
        if reason:
            stopped["reason"] = reason
            raise _Plateau(reason)

    final = _run(ctx, inp, engine_cfg, algo, str(sft_policy), on_step)
    _write_policy(ctx, final)
    exposure = write_exposure(
        ctx.folder, [("Planner warm-up", inp.source, inp.problems, "R_warm = J, solver frozen")]
    )
    return StageResult(
        (POLICY, exposure),
        {
            "acceptance_curve": curve,
            "stop": stopped.get("reason", "max_steps"),
            "rule": rule.__dict__,
            "tau": tau,
        },
    )


def stage_audit(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    s = inp.settings
    c = take(s["audit"], AUDIT_KEYS, "audit")
    policy = _policy_path(ctx, "warmup")
    rm, tau = rmod.load(ctx.use("rm", RM_DIR))
    engine_cfg, algo = _algorithm(inp, "joint", tau, {}, ctx.folder / GATE_LOG)
    algo.gate = gate_fn(rm)
    model, tok, _ = load_model(policy, dtype=torch.float32)
    rollout = HFRollout(model, tok, batch_size=engine_cfg.rollout_batch)
    sampling = SamplingParams(engine_cfg.temperature, engine_cfg.top_p, engine_cfg.max_tokens)
    score = REWARDS.get(engine_cfg.reward)(engine_cfg.verify_workers or None)
    step = StepContext(
        step=0,
        seed=0,
        prompt=lambda p: (),
        stop=(),
        generate=lambda reqs: rollout.generate(reqs, sampling),
        score=score,
        completion_logprobs=lambda pairs: [],
        encode=lambda req: [],
    )
    problems = subset(inp.problems, c["problems"])
    exposure = write_exposure(
        ctx.folder, [("Reward-density audit", inp.source, problems, "forward only")]
    )
    with torch.no_grad():  # forward only: the audit never updates anything
        scored = algo.collect(problems, step)
    prompts, _ = algo._structure(scored)
    tuples = [t for p in prompts for t in p.tuples]
    j = torch.tensor([t.gate for t in tuples])
    r_out = torch.tensor([max((b.reward for b in t.branches), default=0.0) for t in tuples])
    report = audit(j, r_out, AuditThresholds(c["min_pass_at_k"], c["min_r_plan_density"]))
    (ctx.folder / "audit.json").write_text(json.dumps(report.as_dict(), indent=2))
    if not report.passed:
        raise PipelineStop(
            "audit", f"{report.reason}; revisit stage {report.revisit}", revisit=report.revisit
        )
    _write_policy(ctx, policy)
    return StageResult(("audit.json", POLICY, exposure), {"audit": report.as_dict()})


def _boundary(done: int, phase: int, total: int) -> bool:
    return 0 < done < total and done % phase == 0


def _latest_rm(ctx: StageContext, start: int, records: Sequence[dict[str, Any]]) -> Path:
    """The RM of the newest accepted refresh recorded at or before ``start`` (else stage 2's):
    a refresh folder without its record was cut short and is not used."""
    accepted = [int(r["step"]) for r in records if r.get("accepted") and int(r["step"]) <= start]
    return _refresh_dir(ctx, accepted[-1]) if accepted else ctx.use("rm", RM_DIR)


def _refresh_dir(ctx: StageContext, step: int) -> Path:
    return ctx.folder / "rm" / f"step-{step:08d}"


def stage_joint(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    section = dict(inp.settings["joint"])
    own = take({k: section.pop(k) for k in list(section) if k in JOINT_KEYS}, JOINT_KEYS, "joint")
    policy = _policy_path(ctx, "audit")
    state = checkpoint.latest_state(ctx.folder / RUN)
    start = json.loads((state / checkpoint.TRAINER_STATE).read_text())["step"] if state else 0
    log = ctx.folder / REFRESH_LOG
    records = refresh_records(log)
    rm_dir = _latest_rm(ctx, start, records)
    rm, tau = rmod.load(rm_dir)
    extra = {**section, "recent_file": str(ctx.folder / RECENT)}
    engine_cfg, algo = _algorithm(inp, "joint", tau, extra, ctx.folder / GATE_LOG)
    algo.gate = gate_fn(rm)
    total = engine_cfg.max_steps or 1
    phase = max(1, math.ceil(total / max(1, own["phases"])))
    rm_cfg = rm_config(inp, take(inp.settings["rm"], RM_KEYS, "rm"))
    current = {"dir": rm_dir}
    by_id = {p.problem_id: p for p in inp.problems}
    k = int(inp.settings["k"])

    def refresh_at(done: int, tuples: Sequence[tuple[Problem, tuple[str, ...]]]) -> None:
        fresh = judge_tuples(inp.judge, tuples[: own["refresh_problems"] * algo.config.m], k)
        pool = read_pool(current["dir"], by_id)
        dest = _refresh_dir(ctx, done)
        shutil.rmtree(dest, ignore_errors=True)  # what an interrupted try left behind
        record: dict[str, Any] = {
            "step": done,
            "from": str(current["dir"]),
            "fresh": len(fresh),
            "judge": inp.judge.name,
            "problem_ids": sorted({t.prompt_id for t in fresh}),
        }
        try:
            result, _ = refresh(current["dir"], dest, pool, fresh, rm_cfg)
        except (rmod.RMRejected, ValueError) as err:
            # the phase goes on under the last accepted gate; the refusal is on record
            record.update(accepted=False, error=str(err))
        else:
            new_rm, new_tau = rmod.load(dest)
            algo.gate, current["dir"] = gate_fn(new_rm), dest
            algo.config = CPPOAlgoConfig(**{**algo.config.__dict__, "tau": new_tau})
            record.update(accepted=True, metrics=result.metrics, weight_change=result.weight_change)
        record_refresh(log, record)  # last: only now is this boundary's refresh done

    if _boundary(start, phase, total) and start not in {r["step"] for r in records}:
        # killed between the boundary's saved state and its refresh record: redo the refresh
        refresh_at(start, read_recent(ctx.folder / RECENT, start, by_id))

    def on_step(done: int, metrics: dict[str, Any]) -> None:
        ctx.log(done, {k: v for k, v in metrics.items() if isinstance(v, int | float)})
        if _boundary(done, phase, total):
            refresh_at(done, algo.recent)

    final = _run(ctx, inp, engine_cfg, algo, policy, on_step)
    _write_policy(ctx, final)
    refreshed = sorted({i for r in refresh_records(log) for i in r.get("problem_ids", [])})
    exposure = write_exposure(
        ctx.folder,
        [
            ("Joint CPPO rollout", inp.source, inp.problems, "M tuples x K branches"),
            (
                "RM refresh during CPPO",
                "CPPO rollout pool",
                [by_id[i] for i in refreshed],
                "same judge",
            ),
        ],
    )
    return StageResult(
        (POLICY, f"{RUN}/metrics.jsonl", exposure),
        {
            "steps": total,
            "phases": own["phases"],
            "ablation": inp.settings["ablation"],
            "final_rm": str(current["dir"]),
            "checkpoint": str(final),
        },
    )
