"""The Fixed-Strategy Ensemble: the same K strategy hints for every problem, one per branch.

It asks whether CPPO's gain needs problem-specific plans or whether any fixed spread of
algorithm families does as well. Branch i gets hint i (hints repeat, in order, when K is
larger than the list); the solver prompt is the SOLVE prompt CPPO's solver uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cppo_bench.backends.base import Backend
from cppo_bench.methods.base import Method, MethodOptions, MethodOutput, RunContext, branch_attempts
from cppo_bench.problem import Problem

DEFAULT_STRATEGIES: tuple[str, ...] = (
    "Brute force: enumerate every candidate answer directly and check each one.",
    "Greedy: build the answer step by step, always taking the locally best choice.",
    "Dynamic programming: define subproblems over prefixes or states and combine them.",
    "Graph search: model the problem as a graph and explore it with BFS or DFS.",
)


@dataclass(frozen=True)
class FixedStrategyOptions(MethodOptions):
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES

    def __post_init__(self) -> None:
        if not self.strategies or not all(s.strip() for s in self.strategies):
            raise ValueError("strategies must be a non-empty list of non-empty hints")


class FixedStrategy(Method):
    name = "fixed_strategy"
    options_type = FixedStrategyOptions

    @classmethod
    def passk_rule(cls, options: Mapping[str, Any]) -> tuple[str, str]:
        return ("first", "first")  # branch i follows hint i: a k-attempt run gets hints 1..k

    def hints(self, k: int) -> list[str]:
        strategies = self.options.strategies  # type: ignore[attr-defined]
        return [strategies[i % len(strategies)] for i in range(k)]

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        hints = self.hints(ctx.k)
        groups = branch_attempts(backend, problems, ctx, "solve", "solve", [hints] * len(problems))
        return [
            MethodOutput(p.problem_id, g, plans=[list(hints)])
            for p, g in zip(problems, groups, strict=True)
        ]
