"""What an algorithm gives the engine: how a problem's group is sampled, how rows are formed.

``Algorithm`` subclasses (one file each: trainers/algorithms/pkpo.py, passk_rl.py, upskill.py, and CPPO
next) set ``name`` and ``Config`` (a frozen dataclass of their own keys) and implement

* ``requests(problem, ctx)``: the rollouts to draw for one problem (its group, with kinds);
* ``rows(scored, ctx)``: training rows (token segments with region masks and advantages) and
  per-row metric values, from the scored rollouts of this process's problems.

``collect`` (requests -> generate -> score) is the default one-round rollout; a multi-round
algorithm (CPPO: planner tuples, then one solver program per strategy) overrides it and uses
``ctx.generate`` / ``ctx.score`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from trainers.core.batch import Region, Row
from trainers.engine.rewards import Scored
from trainers.engine.rollout import Rollout, RolloutRequest
from trainers.harness import Problem, derive_seed

Messages = tuple[dict[str, str], ...]


@dataclass
class StepContext:
    """What the engine lends an algorithm during one step."""

    step: int
    seed: int
    prompt: Callable[[Problem], Messages]  # the direct-solve chat messages of a problem
    stop: tuple[str, ...]
    generate: Callable[[Sequence[RolloutRequest]], list[Rollout]]
    score: Callable[[Sequence[Rollout]], list[Scored]]
    # (prompt ids, completion ids) pairs -> each completion's per-token log-probs under the
    # current policy, no gradient (UpSkill's MI scores each response under every skill prompt)
    completion_logprobs: Callable[
        [Sequence[tuple[Sequence[int], Sequence[int]]]], list[torch.Tensor]
    ]
    encode: Callable[[RolloutRequest], list[int]]  # a request's prompt ids, as rollouts see them
    # sums a tensor over every process (identity in one): for statistics of the global batch,
    # e.g. CPPO's M = 1 leave-one-out baseline. Every process must call it the same times.
    reduce_sum: Callable[[torch.Tensor], torch.Tensor] = field(default=lambda t: t)
    # every process's list, concatenated in process order (a copy in one process): what one
    # process must act on for all, e.g. CPPO's RM refresh. Every process calls it the same times.
    gather: Callable[[list[Any]], list[Any]] = field(default=lambda items: list(items))
    is_main: bool = True  # the process that writes files shared by all
    # the run's prompt version (TrainConfig.prompt_version resolved): an algorithm that renders
    # prompts of its own (CPPO's plan and solve) renders them in it, as ``prompt`` is
    prompt_version: str = ""

    def seed_for(self, problem: Problem, kind: str, index: int) -> int:
        # per-request seeds from (run seed, step, problem, kind, index): a rollout does not
        # depend on the process or batch that draws it, and a resumed step redraws it exactly
        return derive_seed(self.seed, problem.uid, f"train{self.step}:{kind}", index)


@dataclass
class StepRows:
    rows: list[Row]
    # per-row values the engine averages (and takes the variance of) over the global batch
    values: dict[str, list[float]] = field(default_factory=dict)


class Algorithm:
    name: ClassVar[str] = ""
    Config: ClassVar[type] = object
    # config keys the algorithm's own driver moves between invocations of one run (a
    # resume may carry another value: trainers.engine.manifest.check_resume_config)
    resume_managed_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Any) -> None:
        self.config = config

    def requests(self, problem: Problem, ctx: StepContext) -> list[RolloutRequest]:
        raise NotImplementedError

    def rollouts_per_prompt(self) -> int:
        """How many rollouts one problem's step makes (what ``collect`` generates for it):
        the engine checks prompts_per_step times this against max_rollouts_per_step before
        it builds anything, so a count from a stranger's config is one line, not an OOM."""
        raise NotImplementedError

    def collect(self, problems: Sequence[Problem], ctx: StepContext) -> list[Scored]:
        reqs = [r for p in problems for r in self.requests(p, ctx)]
        return ctx.score(ctx.generate(reqs))

    def rows(self, scored: Sequence[Scored], ctx: StepContext) -> StepRows:
        raise NotImplementedError

    def prompt_carries(self, max_tokens: int) -> int:
        """Tokens this algorithm's prompts may hold beyond the direct prompt of a problem
        (an earlier completion, a skill prefix); sizes vLLM's default context."""
        return 0


def group_tensors(scored: Sequence[Scored]) -> tuple[torch.Tensor, torch.Tensor]:
    """(rewards, group ids) of scored rollouts, groups numbered in order of appearance."""
    ids: dict[str, int] = {}
    gid = [
        ids.setdefault(s.rollout.request.group or s.rollout.request.problem.uid, len(ids))
        for s in scored
    ]
    return (
        torch.tensor([s.reward for s in scored], dtype=torch.float64),
        torch.tensor(gid, dtype=torch.long),
    )


def response_rows(scored: Sequence[Scored], advantages: Sequence[float]) -> list[Row]:
    """One row per rollout: its prompt (no loss) then its completion, trained with its
    advantage. A rollout with no completion tokens gives no row."""
    return [
        Row.prompt_completion(
            s.rollout.prompt_ids,
            s.rollout.completion_ids,
            Region.RESPONSE,
            a,
            s.rollout.sampling_logprobs,  # the rollout engine's, when it reported them (vllm)
        )
        for s, a in zip(scored, advantages, strict=True)
        if s.rollout.completion_ids
    ]


def group_stats(rewards: torch.Tensor, group_ids: torch.Tensor, adv: torch.Tensor) -> list[float]:
    """Per row: 1.0 when its group still produces gradient (some non-zero advantage)."""
    live = {int(g) for g in group_ids[adv != 0].unique()}
    return [1.0 if int(g) in live else 0.0 for g in group_ids]


def transformed_rows(
    scored: Sequence[Scored], rewards: torch.Tensor, groups: torch.Tensor, adv: torch.Tensor
) -> StepRows:
    """Rows of one-response-per-row algorithms whose advantages are transformed rewards (PKPO,
    pass@k-RL), with the diagnostics the study plots for them."""
    values = adv.tolist()
    return StepRows(
        response_rows(scored, values),
        {
            "reward": rewards.tolist(),
            "transformed_reward": values,
            "adv_nonzero": [float(a != 0) for a in values],
            "group_live": group_stats(rewards, groups, adv),
        },
    )
