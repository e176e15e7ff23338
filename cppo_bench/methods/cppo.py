"""CPPO inference: one planner call emits a tuple of strategies, the solver answers each.

The planner was trained on tuples of `tuple_size` (4) strategies, so it is always asked for
a full tuple; K is then met by selection or pooling (the study's K-sweep protocol):

* K <= tuple_size: take K plans of one tuple, `select` = first | last | random (random is
  seeded per problem and keeps the tuple's order);
* K > tuple_size: pool ceil(K / tuple_size) independently sampled tuples; the last tuple
  contributes only the plans still needed, chosen by the same `select` rule.

`inference`: joint (default) = the tuples above; iid = K separate planner draws of the same
prompt, each stopped after its first method, so no strategy sees another (no shared
history). A tuple that parses short is completed by `fill` (see cppo_bench.plan.contract.fill_plans)
and the report records which slots were filled. `fill=fail` (`--strict-plans`) fills
nothing: every branch of a tuple that breaks the PLAN contract is scored as a failed
branch (no solver call; finish reason `invalid_plan`), so a planner that never produces a
valid tuple scores 0 instead of becoming Direct Solve under another name.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cppo_bench.backends.base import Backend
from cppo_bench.methods.base import (
    Attempt,
    Method,
    MethodOptions,
    MethodOutput,
    RunContext,
    branch_attempts,
    generate,
    per_problem,
    prompt_request,
    solver_attempts,
)
from cppo_bench.plan.contract import (
    ValidityReport,
    fill_plans,
    parse_plans,
    plan_tuple,
    validate_plans,
)
from cppo_bench.plan.validity import tuple_flags
from cppo_bench.problem import Problem
from cppo_bench.prompts import load_prompt, render


@dataclass(frozen=True)
class CPPOOptions(MethodOptions):
    inference: Literal["joint", "iid"] = "joint"
    select: Literal["first", "last", "random"] = "first"
    tuple_size: int = 4
    fill: Literal["cycle", "generic", "fail"] = "cycle"  # fail: --strict-plans
    planner_max_tokens: int = 512  # 4 x 45 words fit easily; caps a planner that runs on

    def __post_init__(self) -> None:
        self.require_at_least(1, "tuple_size")


def select_indices(rule: str, size: int, m: int, rng: random.Random) -> list[int]:
    """Which m of a tuple's `size` plans to use."""
    if rule == "first":
        return list(range(m))
    if rule == "last":
        return list(range(size - m, size))
    return sorted(rng.sample(range(size), m))


def tuple_quota(k: int, size: int) -> list[int]:
    """How many plans each pooled tuple contributes: [size, ..., remainder]."""
    n = math.ceil(k / size)
    return [size] * (n - 1) + [k - size * (n - 1)]


class CPPO(Method):
    name = "cppo"
    options_type = CPPOOptions

    @classmethod
    def passk_rule(cls, options: Mapping[str, Any]) -> tuple[str, str]:
        # joint tuples follow the planner's order; iid draws are exchangeable samples
        if options.get("inference", "joint") == "iid":
            return ("unbiased", "first")
        return ("first", str(options.get("select", "first")))

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        opts = self.options
        assert isinstance(opts, CPPOOptions)
        size, k = opts.tuple_size, ctx.k
        joint = opts.inference == "joint"
        # one planner request per tuple (joint) or per strategy (iid), for every problem;
        # an iid draw stops at the second label, so no strategy sees another
        draws = len(tuple_quota(k, size)) if joint else k
        role = "plan" if joint else "plan-iid"
        reqs = [
            prompt_request(
                "plan",
                p,
                ctx,
                ctx.seed_for(p, role, d),
                tag="planner",
                max_tokens=opts.planner_max_tokens,
                n=size,
                n_next=size + 1 if joint else 2,
            )
            for p in problems
            for d in range(draws)
        ]
        outputs, plans, tuples = [], [], []
        for p, results in zip(problems, per_problem(generate(backend, reqs), draws), strict=True):
            out = MethodOutput(p.problem_id, [], planner_tokens=sum(r.num_tokens for r in results))
            texts = [r.text for r in results]
            chosen = self._joint(p, texts, ctx, out) if joint else self._iid(p, texts, k, out)
            # the raw planner text: what a validity gate or an SFT set is built from
            out.extra["planner_completions"] = texts
            out.extra["planner_finish"] = [r.finish_reason for r in results]
            plans.append([plan for plan, _ in chosen])
            tuples.append([t for _, t in chosen])
            outputs.append(out)
        groups = _solve(backend, problems, ctx, plans, tuples)
        for out, attempts in zip(outputs, groups, strict=True):
            out.attempts = attempts
        return outputs

    def _joint(
        self, p: Problem, texts: list[str], ctx: RunContext, out: MethodOutput
    ) -> list[tuple[str | None, int]]:
        opts = self.options
        assert isinstance(opts, CPPOOptions)
        chosen: list[tuple[str | None, int]] = []
        selected: list[list[int]] = []
        for t, (text, m) in enumerate(zip(texts, tuple_quota(ctx.k, opts.tuple_size), strict=True)):
            strict = opts.fill == "fail"
            fill = "cycle" if opts.fill == "fail" else opts.fill
            plans, report = plan_tuple(text, opts.tuple_size, fill=fill, problem=p)
            rng = random.Random(ctx.seed_for(p, "select", t))
            idx = select_indices(opts.select, opts.tuple_size, m, rng)
            failed = strict and not contract_valid(report)
            if strict:
                report.filled, report.fill_rule = [], None  # nothing is filled in strict mode
            out.plans.append(plans)
            out.plan_validity.append(_report_dict(report, failed))
            selected.append(idx)
            chosen += [(None if failed else plans[i], t) for i in idx]
        out.extra["selected"] = selected
        return chosen

    def _iid(
        self, p: Problem, texts: list[str], k: int, out: MethodOutput
    ) -> list[tuple[str | None, int]]:
        opts = self.options
        assert isinstance(opts, CPPOOptions)
        parsed = [parse_plans(text, k=1).plans for text in texts]
        got = [ps[0] for ps in parsed if ps]
        report = validate_plans(got, k, parse_mode="iid", problem=p)
        strict = opts.fill == "fail"
        plans, filled = fill_plans(got, k, "cycle" if opts.fill == "fail" else opts.fill)
        if filled and not strict:
            report.filled, report.fill_rule = filled, opts.fill
        failed = strict and not contract_valid(report)
        out.plans.append(plans)
        out.plan_validity.append(_report_dict(report, failed))
        return [(None if failed else plan, 0) for plan in plans]


def contract_valid(report: ValidityReport) -> bool:
    """Valid as the tallies count it (cppo_bench.plan.validity): a repaired tuple is not."""
    return tuple_flags(report.to_dict())["valid"]


def _report_dict(report: ValidityReport, strict_failed: bool) -> dict[str, Any]:
    d = report.to_dict()
    if strict_failed:  # only then: older records stay byte-identical
        d["strict_failed"] = True
    return d


def _solve(
    backend: Backend,
    problems: Sequence[Problem],
    ctx: RunContext,
    plans: list[list[str | None]],
    tuples: list[list[int]],
) -> list[list[Attempt]]:
    """The solver branches; a branch whose plan is None (its tuple failed under
    --strict-plans) gets no solver call and an empty, failed attempt. The requests of the
    other branches are exactly those `branch_attempts` builds (same seeds, same cache keys)."""
    complete = [[plan for plan in row if plan is not None] for row in plans]
    if all(len(row) == len(given) for row, given in zip(complete, plans, strict=True)):
        return branch_attempts(
            backend, problems, ctx, "solve", "solve", complete, tuple_index=tuples
        )
    jobs, slots = [], []
    for j, p in enumerate(problems):
        for i in range(ctx.k):
            plan = plans[j][i]
            if plan is not None:
                msgs = render("solve", p, ctx.version, plan=plan)
                jobs.append((msgs, ctx.seed_for(p, "solve", i), plan, tuples[j][i]))
                slots.append((j, i))
    stop = load_prompt("solve", ctx.version).render_stop()
    done = dict(zip(slots, solver_attempts(backend, jobs, ctx.sampling, stop), strict=True))
    return [
        [
            done.get((j, i))
            or Attempt("", 0, "invalid_plan", None, tuples[j][i], ctx.seed_for(p, "solve", i))
            for i in range(ctx.k)
        ]
        for j, p in enumerate(problems)
    ]
