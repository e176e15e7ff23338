"""Stages 3 (RM-guided warm-up), 4 (audit) and 5 (joint CPPO) on the shared training engine.

Warm-up and joint training are engine runs of the ``cppo`` algorithm (trainers/algorithms/cppo.py) in the
stage folder itself (the engine's manifest, metrics.jsonl, resumable state and HF folders are
the stage's), so a SIGKILL mid-stage resumes from the engine's last state. The warm-up ends
through the engine's stop signal (its plateau rule returns a reason from ``on_step``). The
warmed policy is handed on as the stage's ``policy`` output. Between joint phases the RM is
refreshed into ``DIR/joint/rm/step-N``; a resumed run picks up the newest refresh at or before
its step.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from trainers.algorithms.cppo import CPPO, CPPOAlgoConfig, read_recent
from trainers.core.cppo_ablation import ablation
from trainers.core.cppo_joint import PlateauRule
from trainers.cppo_pipeline import ranks
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.audit import AuditThresholds, audit
from trainers.cppo_pipeline.exposure import write_exposure
from trainers.cppo_pipeline.negatives import LabelledTuple
from trainers.cppo_pipeline.pool import read_pool
from trainers.cppo_pipeline.refresh import (
    record_refresh,
    refresh,
    refresh_records,
)
from trainers.cppo_pipeline.stage_data import PipelineInputs, judge_tuples, rm_config, subset
from trainers.cppo_pipeline.stages import PipelineStop, StageContext, StageResult
from trainers.engine import checkpoint
from trainers.engine.algorithm import StepContext
from trainers.engine.data import TrainingSet, steps_for
from trainers.engine.rewards import reward_from_config
from trainers.engine.rollout import HFRollout
from trainers.harness import (
    GATE_LOG,
    OutDir,
    Problem,
    SamplingParams,
    load_model,
    read_metrics,
    userfiles,
)

REFRESH_LOG = "refresh.jsonl"
RECENT = "recent_tuples.json"  # the last step's tuples (a resumed refresh relabels them)


def gate_fn(rm: rmod.RewardModel):
    def gate(problems: Sequence[Problem], tuples: Sequence[tuple[str, ...]]) -> torch.Tensor:
        items = [LabelledTuple(p, t, 0, "rollout") for p, t in zip(problems, tuples, strict=True)]
        return rmod.probabilities(rm, items)

    return gate


def _algorithm(
    inp: PipelineInputs, stage: str, tau: float, engine: dict[str, Any], **algo: Any
) -> tuple[Any, CPPO]:
    c = inp.config
    engine_cfg = dataclasses.replace(c.engine, **engine)
    algo_cfg = CPPOAlgoConfig(
        k=c.k,
        m=ablation(c.ablation, c.m).m or c.m,  # an M-sweep row fixes M
        tau=tau,
        stage=stage,
        ablation=c.ablation,
        **algo,
    )
    return engine_cfg, CPPO(algo_cfg)


def _run(
    ctx: StageContext,
    inp: PipelineInputs,
    engine_cfg: Any,
    algo: CPPO,
    model: str,
    on_step: Any,
) -> tuple[Path, Any]:
    """The engine run of this stage in its own folder; (final HF folder, the engine's result:
    the steps it ran, its stop reason)."""
    from trainers.engine.loop import RunSpec, train

    spec = RunSpec(
        algorithm=algo,
        config=engine_cfg,
        training=TrainingSet(list(inp.problems), inp.source, inp.removed, inp.eval_sets),
        out_dir=ctx.folder,
        model=model,
        seed=inp.seed,
        resume=checkpoint.latest_state(ctx.folder) is not None,
        progress=ctx.progress,
        on_step=on_step,
        extra_manifest={"stage": ctx.name, "status": "running", "consumed": dict(ctx.consumed)},
    )
    result = train(spec)
    final = ctx.folder / checkpoint.HF_DIR / "final"
    if not final.exists():
        raise PipelineStop(ctx.name, f"no checkpoint under {final.parent}")
    return final.resolve(), result


def stage_warmup(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    sft_policy = ctx.output("sft", "planner")
    if not ablation(inp.config.ablation).warmup:
        return StageResult((), {"skipped": "ablation no_warmup"}, {"policy": sft_policy})
    w = inp.config.warmup
    rule = PlateauRule(w.patience, w.min_gain, w.max_steps, w.target)
    rm, tau = rmod.load(Path(ctx.output("rm", "reward_model")))
    engine = {"max_steps": rule.max_steps}
    if w.prompts_per_step is not None:
        engine["prompts_per_step"] = w.prompts_per_step
    engine_cfg, algo = _algorithm(inp, "warmup", tau, engine, gate_log=str(ctx.folder / GATE_LOG))
    algo.gate = gate_fn(rm)
    curve = [float(r.get("j_accept_mean") or 0.0) for r in read_metrics(ctx.folder)]

    def on_step(done: int, metrics: dict[str, Any]) -> str | None:
        del curve[done - 1 :]  # a resumed run recomputes the steps after its state
        curve.append(float(metrics.get("j_accept_mean") or 0.0))
        return rule.stop(curve)

    final, result = _run(ctx, inp, engine_cfg, algo, sft_policy, on_step)
    stopped = result.stopped
    exposure = write_exposure(
        ctx.folder, [("Planner warm-up", inp.source, inp.problems, "R_warm = J, solver frozen")]
    )
    return StageResult(
        (exposure,),
        {
            "acceptance_curve": curve,
            "stop": stopped or f"max_steps {rule.max_steps}",
            "rule": dataclasses.asdict(rule),
            "tau": tau,
        },
        {"policy": str(final)},
    )


def stage_audit(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    c = inp.config.audit
    policy = ctx.output("warmup", "policy")
    rm, tau = rmod.load(Path(ctx.output("rm", "reward_model")))
    engine_cfg, algo = _algorithm(inp, "joint", tau, {}, gate_log=str(ctx.folder / GATE_LOG))
    algo.gate = gate_fn(rm)
    device = ranks.device()
    model, tok, _ = load_model(policy, dtype=torch.float32)
    model = model.to(device)
    rollout = HFRollout(model, tok, batch_size=engine_cfg.rollout_batch)
    sampling = SamplingParams(engine_cfg.temperature, engine_cfg.top_p, engine_cfg.max_tokens)
    score = reward_from_config(engine_cfg)  # the joint stage's reward, on its test set too
    step = StepContext(
        step=0,
        seed=inp.seed,
        prompt=lambda p: (),
        stop=(),
        generate=lambda reqs: rollout.generate(reqs, sampling),
        score=score,
        completion_logprobs=lambda pairs: [],
        encode=lambda req: [],
        prompt_version=engine_cfg.prompt_version,
    )
    problems = subset(inp.problems, c.problems)
    exposure = write_exposure(
        ctx.folder, [("Reward-density audit", inp.source, problems, "forward only")]
    )
    with torch.no_grad():  # forward only: the audit never updates anything
        scored = algo.collect(problems, step)
    prompts, _ = algo._structure(scored)
    tuples = [t for p in prompts for t in p.tuples]
    j = torch.tensor([t.gate for t in tuples])
    r_out = torch.tensor([max((b.reward for b in t.branches), default=0.0) for t in tuples])
    report = audit(j, r_out, AuditThresholds(c.min_pass_at_k, c.min_r_plan_density))
    OutDir(ctx.folder).write_text("audit.json", json.dumps(report.as_dict(), indent=2))
    if not report.passed:
        raise PipelineStop(
            "audit", f"{report.reason}; revisit stage {report.revisit}", revisit=report.revisit
        )
    return StageResult(("audit.json", exposure), {"audit": report.as_dict()}, {"policy": policy})


def _boundary(done: int, phase: int, total: int) -> bool:
    return 0 < done < total and done % phase == 0


def _latest_rm(ctx: StageContext, start: int, records: Sequence[dict[str, Any]]) -> Path:
    """The RM of the newest accepted refresh recorded at or before ``start`` (else stage 2's):
    a refresh folder without its record was cut short and is not used."""
    accepted = [int(r["step"]) for r in records if r.get("accepted") and int(r["step"]) <= start]
    return _refresh_dir(ctx, accepted[-1]) if accepted else Path(ctx.output("rm", "reward_model"))


def _refresh_dir(ctx: StageContext, step: int) -> Path:
    return ctx.folder / "rm" / f"step-{step:08d}"


def stage_joint(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    own = inp.config.joint
    policy = ctx.output("audit", "policy")
    state = checkpoint.latest_state(ctx.folder)
    start = userfiles.read_json(state / checkpoint.TRAINER_STATE)["step"] if state else 0
    log = ctx.folder / REFRESH_LOG
    records = refresh_records(log)
    rm_dir = _latest_rm(ctx, start, records)
    rm, tau = rmod.load(rm_dir)
    engine_cfg, algo = _algorithm(
        inp,
        "joint",
        tau,
        {"max_steps": own.max_steps},
        gate_log=str(ctx.folder / GATE_LOG),
        recent_file=str(ctx.folder / RECENT),
    )
    algo.gate = gate_fn(rm)
    # the steps the engine will run (the epochs cap max_steps): the phases split these
    total = steps_for(
        len(inp.problems), engine_cfg.prompts_per_step, engine_cfg.epochs, engine_cfg.max_steps
    )
    phase = max(1, math.ceil(total / max(1, own.phases)))
    rm_cfg = rm_config(inp, inp.config.rm)
    current = {"dir": rm_dir}
    by_id = {p.problem_id: p for p in inp.problems}
    k = inp.config.k

    def refresh_main(done: int, tuples: Sequence[tuple[Problem, tuple[str, ...]]]) -> None:
        """The refresh itself: the main process alone writes its folder and record."""
        fresh = judge_tuples(inp.judge, tuples[: own.refresh_problems * algo.config.m], k)
        pool = read_pool(current["dir"], by_id)
        dest = _refresh_dir(ctx, done)
        # what an interrupted try left behind; from the stage folder down, so a link
        # planted at rm/ is refused, never entered
        OutDir(ctx.folder).clear(dest.relative_to(ctx.folder))
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
            record.update(accepted=True, metrics=result.metrics, weight_change=result.weight_change)
        record_refresh(log, record)  # last: only now is this boundary's refresh done

    def refresh_at(done: int, tuples: Sequence[tuple[Problem, tuple[str, ...]]]) -> None:
        """Every process: the main one refreshes from the whole step's tuples, the others
        wait, then every process loads what the record says (one gate for all)."""
        if ranks.is_main():
            refresh_main(done, tuples)
        ranks.barrier()
        record = next((r for r in refresh_records(log) if r.get("step") == done), None)
        if record is None:
            raise PipelineStop(ctx.name, f"no refresh record for step {done} in {log}")
        if record.get("accepted"):
            dest = _refresh_dir(ctx, done)
            # checked by refresh() under its rule before the record said accepted
            new_rm, new_tau = rmod.load(dest, rule=None)
            algo.gate, current["dir"] = gate_fn(new_rm), dest
            algo.config = dataclasses.replace(algo.config, tau=new_tau)

    if _boundary(start, phase, total) and start not in {r["step"] for r in records}:
        # killed between the boundary's saved state and its refresh record: redo the refresh
        refresh_at(start, read_recent(ctx.folder / RECENT, start, by_id))

    def on_step(done: int, metrics: dict[str, Any]) -> None:
        if _boundary(done, phase, total):
            refresh_at(done, [(by_id[pid], plans) for pid, plans in algo.recent])

    final, result = _run(ctx, inp, engine_cfg, algo, policy, on_step)
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
        ("metrics.jsonl", exposure),
        {
            # the steps the engine ran: the epochs cap max_steps (30 epochs of 128 problems at
            # 16 a step are 240 steps), and this said max_steps whatever ran
            "steps": result.steps,
            "max_steps": engine_cfg.max_steps,
            "phases": own.phases,
            "ablation": inp.config.ablation,
            "final_rm": str(current["dir"]),
            "checkpoint": str(final),
        },
        {"policy": str(final)},
    )
