"""Direct Solve: K independent samples of the same prompt (different seeds)."""

from __future__ import annotations

from collections.abc import Sequence

from cppo_bench.backends.base import Backend
from cppo_bench.methods.base import Method, MethodOutput, RunContext, branch_attempts
from cppo_bench.problem import Problem
from cppo_bench.prompts import DEFAULT_VERSION, Messages, load_prompt, render


def render_messages(problem: Problem, version: str = DEFAULT_VERSION) -> Messages:
    """The direct-solve chat messages (system + user); lm-eval tasks use the same ones."""
    return render("direct", problem, version)


def stop_strings(version: str = DEFAULT_VERSION) -> tuple[str, ...]:
    return load_prompt("direct", version).render_stop()


class Direct(Method):
    name = "direct"

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        groups = branch_attempts(backend, problems, ctx, "direct", "sample")
        return [MethodOutput(p.problem_id, g) for p, g in zip(problems, groups, strict=True)]
