"""PKPO (Walder & Karkhanis 2025): n samples per problem, rewards transformed so the policy
gradient estimates the gradient of pass@k_opt; the transformed rewards are the advantages,
used as they are (no re-normalisation: it would bias the estimator).

Study settings (the defaults of PKPOConfig below): n = 16, k_opt = 4, SLOO-minus-one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainers.core.pkpo import EDGE_CASES, ESTIMATORS, pkpo_transform
from trainers.engine.algorithm import (
    Algorithm,
    StepContext,
    StepRows,
    group_tensors,
    transformed_rows,
)
from trainers.engine.rewards import Scored
from trainers.engine.rollout import RolloutRequest
from trainers.harness import Problem, quote


@dataclass(frozen=True)
class PKPOConfig:
    n: int = 16  # samples per problem
    k_opt: int = 4  # the k of the pass@k whose gradient is estimated
    estimator: str = "sloo_minus_one"  # s | sloo | sloo_minus_one
    # k = 1 / k = n: "public" (the public PKPO code's) | "loo" (see trainers/core/pkpo.py)
    edge_cases: str = "public"

    def __post_init__(self) -> None:
        if self.edge_cases not in EDGE_CASES:
            raise ValueError(f"edge_cases: {quote(self.edge_cases)} is not one of {EDGE_CASES}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(
                f"estimator: {quote(self.estimator)} is not one of {sorted(ESTIMATORS)}"
            )
        if not 1 <= self.k_opt <= self.n:
            raise ValueError(f"k_opt: need 1 <= k_opt <= n, got k_opt={self.k_opt}, n={self.n}")


def sample_requests(problem: Problem, ctx: StepContext, n: int, kind: str) -> list[RolloutRequest]:
    """n independent samples of the direct-solve prompt, one group per problem."""
    messages = ctx.prompt(problem)
    return [
        RolloutRequest(
            problem,
            ctx.seed_for(problem, kind, i),
            messages=messages,
            kind=kind,
            group=problem.uid,
            stop=ctx.stop,
        )
        for i in range(n)
    ]


class PKPO(Algorithm):
    name = "pkpo"
    Config = PKPOConfig

    def requests(self, problem: Problem, ctx: StepContext) -> list[RolloutRequest]:
        return sample_requests(problem, ctx, self.config.n, "sample")

    def rollouts_per_prompt(self) -> int:
        return self.config.n

    def rows(self, scored: Sequence[Scored], ctx: StepContext) -> StepRows:
        rewards, groups = group_tensors(scored)
        # PKPO Eq. SLOO-1 per problem group; the transformed rewards ARE the advantages
        c = self.config
        adv = pkpo_transform(rewards, groups, c.k_opt, c.estimator, c.edge_cases)
        return transformed_rows(scored, rewards, groups, adv)
