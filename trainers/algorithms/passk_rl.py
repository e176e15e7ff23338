"""Pass@k training (Chen et al. 2025): n samples per problem, every correct sample gets the
closed-form A_pos and every failed one A_neg of the group's pass@k reward (no subset draws).

Study settings (the defaults of its Config below): k = 4, n = 16 (PKPO's sample count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainers.algorithms.pkpo import sample_requests
from trainers.core.passk_rl import passk_advantages
from trainers.engine import algorithm as alg
from trainers.engine.algorithm import Algorithm, StepContext, StepRows
from trainers.engine.rewards import Scored
from trainers.engine.rollout import RolloutRequest
from trainers.harness import Problem


@dataclass(frozen=True)
class PassKConfig:
    n: int = 16
    k: int = 4

    def __post_init__(self) -> None:
        if not 1 <= self.k <= self.n:
            raise ValueError(f"k: need 1 <= k <= n, got k={self.k}, n={self.n}")


class PassKRL(Algorithm):
    name = "passk_rl"
    Config = PassKConfig

    def requests(self, problem: Problem, ctx: StepContext) -> list[RolloutRequest]:
        return sample_requests(problem, ctx, self.config.n, "sample")

    def rollouts_per_prompt(self) -> int:
        return self.config.n

    def rows(self, scored: Sequence[Scored], ctx: StepContext) -> StepRows:
        rewards, groups = alg.group_tensors(scored)
        # Chen et al. Eq. A_pos / A_neg need binary rewards: a partial score counts as a fail
        binary = (rewards >= 1.0).to(rewards.dtype)
        adv = passk_advantages(binary, groups, self.config.k)
        return alg.transformed_rows(scored, rewards, groups, adv)
