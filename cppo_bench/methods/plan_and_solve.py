"""Plan-and-Solve: one prompt asks for a short plan and then the program; K samples.

The plan and the code come from one completion, so all its tokens count as solver tokens
(planner tokens stay 0); the plan text before the code block is kept on the branch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cppo_bench.backends.base import Backend
from cppo_bench.methods.base import Method, MethodOutput, RunContext, branch_attempts
from cppo_bench.problem import Problem

_PLAN = re.compile(r"plan\s*:\s*(.*?)(?:```|$)", re.IGNORECASE | re.DOTALL)


def extract_plan(completion: str) -> str | None:
    """The text after "Plan:" up to the code block, or None when the model wrote no plan."""
    match = _PLAN.search(completion)
    text = " ".join(match.group(1).split()) if match else ""
    return text or None


class PlanAndSolve(Method):
    name = "plan_and_solve"

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        outputs = []
        for p, mine in zip(
            problems,
            branch_attempts(backend, problems, ctx, "plan_and_solve", "sample"),
            strict=True,
        ):
            for a in mine:
                a.plan = extract_plan(a.completion)
            out = MethodOutput(p.problem_id, mine, plans=[[a.plan or "" for a in mine]])
            no_plan = sum(a.plan is None for a in mine)
            if no_plan:  # the model skipped the plan: those branches are Direct Solve
                out.extra["fallbacks"] = {"plan_and_solve_no_plan": no_plan}
            outputs.append(out)
        return outputs
