"""CPPO inference: one planner call emits a tuple of strategies, the solver answers each.

The planner was trained on tuples of `tuple_size` (4) strategies, so it is always asked for
a full tuple; K is then met by selection or pooling (the study's K-sweep protocol):

* K <= tuple_size: take K plans of one tuple, `select` = first | last | random (random is
  seeded per problem and keeps the tuple's order);
* K > tuple_size: pool ceil(K / tuple_size) independently sampled tuples; the last tuple
  contributes only the plans still needed, chosen by the same `select` rule.

`inference`: joint (default) = the tuples above; iid = K separate planner draws of the same
prompt, each stopped after its first method, so no strategy sees another (no shared
history). A tuple that parses short is completed by `fill` (see cppo_bench.plans.fill_plans)
and the report records which slots were filled.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cppo_bench.backends.base import Backend
from cppo_bench.methods import METHODS
from cppo_bench.methods.base import (
    Method,
    MethodOptions,
    MethodOutput,
    RunContext,
    branch_attempts,
    generate,
    per_problem,
    prompt_request,
)
from cppo_bench.plans import fill_plans, parse_plans, plan_tuple, validate_plans
from cppo_bench.problem import Problem


@dataclass(frozen=True)
class CPPOOptions(MethodOptions):
    inference: Literal["joint", "iid"] = "joint"
    select: Literal["first", "last", "random"] = "first"
    tuple_size: int = 4
    fill: Literal["cycle", "generic"] = "cycle"
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


@METHODS.register("cppo")
class CPPO(Method):
    name = "cppo"
    options_type = CPPOOptions

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
        groups = branch_attempts(
            backend, problems, ctx, "solve", "solve", plans, tuple_index=tuples
        )
        for out, attempts in zip(outputs, groups, strict=True):
            out.attempts = attempts
        return outputs

    def _joint(
        self, p: Problem, texts: list[str], ctx: RunContext, out: MethodOutput
    ) -> list[tuple[str, int]]:
        opts = self.options
        assert isinstance(opts, CPPOOptions)
        chosen: list[tuple[str, int]] = []
        selected: list[list[int]] = []
        for t, (text, m) in enumerate(zip(texts, tuple_quota(ctx.k, opts.tuple_size), strict=True)):
            plans, report = plan_tuple(text, opts.tuple_size, fill=opts.fill, problem=p)
            rng = random.Random(ctx.seed_for(p, "select", t))
            idx = select_indices(opts.select, opts.tuple_size, m, rng)
            out.plans.append(plans)
            out.plan_validity.append(report.to_dict())
            selected.append(idx)
            chosen += [(plans[i], t) for i in idx]
        out.extra["selected"] = selected
        return chosen

    def _iid(
        self, p: Problem, texts: list[str], k: int, out: MethodOutput
    ) -> list[tuple[str, int]]:
        opts = self.options
        assert isinstance(opts, CPPOOptions)
        parsed = [parse_plans(text, k=1).plans for text in texts]
        got = [ps[0] for ps in parsed if ps]
        report = validate_plans(got, k, parse_mode="iid", problem=p)
        plans, filled = fill_plans(got, k, opts.fill)
        if filled:
            report.filled, report.fill_rule = filled, opts.fill
        out.plans.append(plans)
        out.plan_validity.append(report.to_dict())
        return [(plan, 0) for plan in plans]
