"""CPPO on the shared engine: planner tuples, then one solver program per strategy.

One ``Algorithm`` serves stage 3 (``stage: warmup``: R_warm = J, planner rows only, no solver
run) and stage 5 (``stage: joint``: M tuples per prompt, K solver branches each, verified
rewards, within-tuple solver and across-tuple planner advantages in one split-region batch).
The gate J is the accepted reward model of stage 2 (or its latest refresh), set by the pipeline
(``trainers.cppo_pipeline.pipeline``) as ``algorithm.gate``; it stays frozen within a phase.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from trainers.core.cppo import PromptRollouts, SolverBranch, TupleRollout
from trainers.core.cppo_ablation import ABLATIONS, DEFAULT_M, STUDY_K, ablation, step_rollouts
from trainers.core.cppo_joint import joint_rows, warmup_rows
from trainers.engine.algorithm import Algorithm, StepContext, StepRows
from trainers.engine.artifacts import atomic_write_text
from trainers.engine.rewards import Scored
from trainers.engine.rollout import RolloutRequest
from trainers.harness import (
    DEFAULT_VERSION,
    TAU,
    Problem,
    format_plans,
    load_prompt,
    plan_tuple,
    quote,
    read_jsonl,
    render,
)

JOINT_CELLS = ("valid_pass", "valid_fail", "invalid_pass", "invalid_fail")
# (problems, tuples as text) -> p(valid) per tuple; the pipeline wraps the reward model
GateFn = Callable[[Sequence[Problem], Sequence[tuple[str, ...]]], torch.Tensor]


@dataclass(frozen=True)
class CPPOAlgoConfig:
    k: int = STUDY_K  # strategies per tuple = solver branches
    m: int = DEFAULT_M  # tuples per prompt
    tau: float = TAU
    stage: str = "joint"  # warmup | joint
    ablation: str = "cppo"  # a row of trainers.core.cppo_ablation.ABLATIONS
    fill: str = "cycle"
    gate_log: str = ""  # JSONL of per-tuple gate records for the report ("" = none)
    recent_file: str = ""  # JSON of the step's tuples, kept for a resumed RM refresh ("" = none)

    def __post_init__(self) -> None:
        if self.stage not in ("warmup", "joint"):
            raise ValueError(f"stage: {quote(self.stage)} is not one of warmup, joint")
        if self.ablation not in ABLATIONS:
            raise ValueError(
                f"ablation: unknown {quote(self.ablation)}; known: {ABLATIONS.names()}"
            )
        if self.k < 1 or self.m < 1:
            raise ValueError("k and m must be >= 1")


class CPPO(Algorithm):
    name = "cppo"
    Config = CPPOAlgoConfig
    # the joint stage sets tau from the newest accepted reward model at every (re)start, and
    # the log files inside the stage folder (a run moved elsewhere writes them there)
    resume_managed_keys = ("tau", "gate_log", "recent_file")

    def __init__(self, config: CPPOAlgoConfig) -> None:
        super().__init__(config)
        self.gate: GateFn | None = None
        # the last step's tuples of every process, (problem id, plans): what a refresh relabels
        self.recent: list[tuple[str, tuple[str, ...]]] = []

    # -- rollouts ------------------------------------------------------------------------
    def _planner_requests(self, problems: Sequence[Problem], ctx: StepContext) -> list:
        # the run's prompt version (engine key prompt_version): the planner and solver read
        # what `cppo-bench run --method cppo -m prompt_version=...` sends at evaluation
        c, v = self.config, ctx.prompt_version or DEFAULT_VERSION
        stop = load_prompt("plan", v).render_stop(n_next=c.k + 1)
        return [
            RolloutRequest(
                p,
                ctx.seed_for(p, "planner", m),
                messages=render("plan", p, v, n=c.k, n_next=c.k + 1),
                kind="planner",
                group=p.uid,
                meta={"tuple": m},
                stop=stop,
            )
            for p in problems
            for m in range(c.m)
        ]

    def rollouts_per_prompt(self) -> int:
        c = self.config
        return step_rollouts(c.m, c.k, joint=c.stage == "joint")

    def collect(self, problems: Sequence[Problem], ctx: StepContext) -> list[Scored]:
        if self.gate is None:
            raise RuntimeError("CPPO needs its gate (an accepted reward model) before a step")
        c, v = self.config, ctx.prompt_version or DEFAULT_VERSION
        planned = ctx.generate(self._planner_requests(problems, ctx))
        tuples, reports = [], []
        for r in planned:
            parsed, report = plan_tuple(r.text, c.k, fill=c.fill, problem=r.request.problem)
            tuples.append(tuple(parsed))
            reports.append(report)
        probs = self.gate([r.request.problem for r in planned], tuples)
        # every process's tuples (problem id, plans), the same list on each: the RM refresh
        # runs once, on the main process, from the whole step's tuples
        mine = [(r.request.problem.problem_id, t) for r, t in zip(planned, tuples, strict=True)]
        self.recent = [(str(pid), tuple(map(str, t))) for pid, t in ctx.gather(mine)]
        if c.recent_file and ctx.is_main:  # on disk before the engine saves this step's state
            write_recent(Path(c.recent_file), ctx.step + 1, self.recent)
        out: list[Scored] = []
        jobs: list[RolloutRequest] = []
        for r, plans, rep, p in zip(planned, tuples, reports, probs.tolist(), strict=True):
            j = float(p >= c.tau)
            meta = {
                **r.request.meta,
                "gate": j,
                "gate_prob": p,
                "valid": rep.valid,
                "dup": rep.n_duplicates > 0,
                "plans": plans,
            }
            req = dataclasses.replace(r.request, meta=meta)
            out.append(Scored(dataclasses.replace(r, request=req), j, j > 0, "gate"))
            if c.stage == "joint":
                prob, m = r.request.problem, r.request.meta["tuple"]
                stop = load_prompt("solve", v).render_stop()
                jobs += [
                    RolloutRequest(
                        prob,
                        ctx.seed_for(prob, f"solver{m}", i),
                        messages=render("solve", prob, v, plan=s),
                        kind="solver",
                        group=f"{prob.uid}#{m}",
                        meta={"tuple": m, "branch": i},
                        stop=stop,
                    )
                    for i, s in enumerate(plans)
                ]
        if jobs:
            out += ctx.score(ctx.generate(jobs))
        return out

    def prompt_carries(self, max_tokens: int) -> int:
        # a solver prompt holds one plan, cut from a planner completion of <= max_tokens
        return max_tokens

    # -- rows ----------------------------------------------------------------------------
    def _structure(self, scored: Sequence[Scored]) -> tuple[list[PromptRollouts], list[Scored]]:
        planners = [s for s in scored if s.rollout.request.kind == "planner"]
        branches: dict[tuple[str, int], list[Scored]] = defaultdict(list)
        for s in scored:
            if s.rollout.request.kind == "solver":
                req = s.rollout.request
                branches[(req.problem.uid, req.meta["tuple"])].append(s)
        by_prompt: dict[str, list[TupleRollout]] = defaultdict(list)
        for s in planners:
            req, ro = s.rollout.request, s.rollout
            br = sorted(
                branches.get((req.problem.uid, req.meta["tuple"]), []),
                key=lambda b: b.rollout.request.meta["branch"],
            )
            by_prompt[req.problem.uid].append(
                TupleRollout(
                    ro.prompt_ids,
                    ro.completion_ids,
                    float(req.meta["gate"]),
                    tuple(
                        SolverBranch(b.rollout.prompt_ids, b.rollout.completion_ids, b.reward)
                        for b in br
                    ),
                )
            )
        return [PromptRollouts(tuple(t)) for t in by_prompt.values()], planners

    def rows(self, scored: Sequence[Scored], ctx: StepContext) -> StepRows:
        c = self.config
        prompts, planners = self._structure(scored)
        if c.stage == "warmup":
            step = warmup_rows(prompts)
        else:
            step = joint_rows(prompts, ablation(c.ablation, c.m), ctx.reduce_sum)
        tuples = [t for p in prompts for t in p.tuples]
        r_out = [max((b.reward for b in t.branches), default=0.0) for t in tuples]
        metas = [s.rollout.request.meta for s in planners]
        values = {
            "j_accept": [float(m["gate"]) for m in metas],
            "plan_valid": [float(m["valid"]) for m in metas],
            "dup_tuple": [float(m["dup"]) for m in metas],
            "reward": [float(m["gate"]) for m in metas],
        }
        if c.stage == "joint":
            rp = {k: v for k, v in step.metrics.items() if not k.startswith("joint/")}
            values.update(
                r_out=r_out,
                r_plan=[g * r for g, r in zip(values["j_accept"], r_out, strict=True)],
                r_plan_zero=[
                    float(g * r == 0) for g, r in zip(values["j_accept"], r_out, strict=True)
                ],
                reward=[g * r for g, r in zip(values["j_accept"], r_out, strict=True)],
                solver_pass=[b.reward for t in tuples for b in t.branches],
                **joint_indicators(values["j_accept"], r_out),
                planner_adv_nonzero=[rp["planner_adv_nonzero"]],
                solver_adv_nonzero=[rp["solver_adv_nonzero"]],
            )
        self._log_gate(planners, r_out if c.stage == "joint" else None, ctx.step)
        return StepRows(step.rows, values)

    def _log_gate(self, planners: Sequence[Scored], r_out: list[float] | None, step: int) -> None:
        if not self.config.gate_log:
            return
        path = Path(self.config.gate_log)
        from trainers.harness import make_root, storefs

        make_root(path.parent)
        with storefs.open_file(path, "a", encoding="utf-8", root=path.parent) as fh:  # no link
            for i, s in enumerate(planners):
                meta = s.rollout.request.meta
                rec = {
                    "gate_prob": float(min(max(meta["gate_prob"], 0.0), 1.0)),
                    "tau": self.config.tau,
                    "step": step + 1,
                    "split": "train",
                    "prompt_id": s.rollout.request.problem.problem_id,
                    "plans": format_plans(meta["plans"]),
                }
                if r_out is not None:
                    rec["passed"] = bool(r_out[i] > 0)
                fh.write(json.dumps(rec) + "\n")


def joint_indicators(j: Sequence[float], r_out: Sequence[float]) -> dict[str, list[float]]:
    """Per tuple, which cell of the validity x outcome table it falls in (means = shares)."""
    cells: dict[str, list[float]] = {f"joint_{c}": [] for c in JOINT_CELLS}
    for g, r in zip(j, r_out, strict=True):
        cell = f"{'valid' if g > 0 else 'invalid'}_{'pass' if r > 0 else 'fail'}"
        for c in JOINT_CELLS:
            cells[f"joint_{c}"].append(float(c == cell))
    return cells


def write_recent(path: Path, step: int, tuples: Sequence[tuple[str, tuple[str, ...]]]) -> None:
    """The tuples (problem id, plans) sampled at ``step`` by every process (what an RM
    refresh at that boundary relabels); on disk before the engine saves the step's state, so
    a resumed refresh finds them."""
    rows = [{"problem_id": pid, "plans": list(t)} for pid, t in tuples]
    atomic_write_text(path, json.dumps({"step": step, "tuples": rows}))


def read_recent(
    path: Path, step: int, problems: dict[str, Problem]
) -> list[tuple[Problem, tuple[str, ...]]]:
    """The tuples kept at ``step``; an error when the file holds another step's."""
    rows = read_jsonl(path)
    data = rows[0][1] if len(rows) == 1 and isinstance(rows[0][1], dict) else {}
    if data.get("step") != step:
        raise ValueError(f"{path}: no tuples kept for step {step} (found {data.get('step')})")
    try:
        return [(problems[r["problem_id"]], tuple(map(str, r["plans"]))) for r in data["tuples"]]
    except (KeyError, TypeError):
        raise ValueError(f"{path}: tuples of problems outside this run") from None
