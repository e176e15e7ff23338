"""UpSkill (Shah et al. 2026): one completion per latent skill per prompt, the skill given as
a fixed prefix of the prompt; reward r = r_correct + alpha_mi * r_MI, with r_MI how much
likelier the response is under its own skill than under the average skill (sequence level, as
the released code computes it; ``mi_level: token`` is the token-level variant). Advantages are
the combined rewards group-normalised within each prompt (GRPO).

Study settings (the defaults of its Config below): n_skills = 4 (the K = 4 budget), enumerated
(one completion per skill, not random draws), alpha_mi = 5.0, full fine-tuning (no LoRA).

``mi_warmup_steps`` (not in the paper or the study; default 0, off) trains on correctness alone
(alpha_mi = 0) for that many steps before the MI term switches on: on a small random policy the
MI term alone drives every skill onto one token long before correctness has taught it which
answers are plausible (docs/learning.md, UpSkill). r_MI is still computed and logged meanwhile.

``scale_rewards`` (TRL's GRPOConfig name; default "group", the study's GRPO) divides each
prompt's centred combined rewards by their standard deviation; "none" keeps them centred only
(Dr. GRPO, Liu et al. 2025). Why it matters here: in a group whose correctness ties (every
sample fails, the common case), the std is MI's alone, so dividing by it gives the MI term unit
weight whatever alpha_mi is; unscaled, alpha_mi weighs MI against correctness as written.

Two options of the released code's toy experiment (experiments/arithmetic/arithmetic_llm.py in
github.com/dshah02/upskill; its GSM8K trainer has neither), both off by default:
``mi_cap`` clamps each rollout's weighted MI term alpha_mi * r_MI to [-mi_cap, mi_cap] (its
``--cap``: MI then stops paying once a response is specific enough, and a response shared with
other skills costs at most mi_cap); ``group_by: skill`` normalises advantages within each
(prompt, skill) group, as that toy samples its C completions from one (prompt, skill) pair,
instead of across all the prompt's skills (needs completions_per_skill >= 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from trainers.core.grpo import group_normalised_advantages
from trainers.core.upskill import MI_LEVELS, mi_reward, upskill_reward
from trainers.engine.algorithm import (
    Algorithm,
    Messages,
    StepContext,
    StepRows,
    group_stats,
    group_tensors,
    response_rows,
)
from trainers.engine.rewards import Scored
from trainers.engine.rollout import RolloutRequest
from trainers.harness import Problem, quote

# TRL's GRPOConfig.scale_rewards values this trainer knows ("batch" is not implemented)
SCALE_REWARDS = ("group", "none")
GROUP_BY = ("prompt", "skill")

# the evaluation method's format (cppo_bench.methods.skills): {i} is the 0-based skill index
SKILL_PREFIX = "<skill_{i}>"


@dataclass(frozen=True)
class UpSkillConfig:
    n_skills: int = 4
    completions_per_skill: int = 1
    alpha_mi: float = 5.0
    mi_warmup_steps: int = 0  # steps (0-based) before this one train with alpha_mi = 0
    mi_level: str = "sequence"  # sequence (released code) | token
    prefix_format: str = SKILL_PREFIX  # must match `cppo-bench run --method skills`
    scale_rewards: str = "group"  # group (GRPO, the study's) | none (Dr. GRPO)
    mi_cap: float | None = None  # |alpha_mi * r_MI| clamped to this (released toy's --cap)
    group_by: str = "prompt"  # prompt (all its skills, the study's) | skill (prompt, skill)

    def __post_init__(self) -> None:
        if self.n_skills < 1 or self.completions_per_skill < 1:
            raise ValueError("n_skills and completions_per_skill must be >= 1")
        if self.mi_warmup_steps < 0:
            raise ValueError("mi_warmup_steps must be >= 0")
        if self.mi_level not in MI_LEVELS:
            raise ValueError(
                f"mi_level: {quote(self.mi_level)} is not one of {', '.join(MI_LEVELS)}"
            )
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(
                f"scale_rewards: {quote(self.scale_rewards)} is not one of {', '.join(SCALE_REWARDS)}"
            )
        if self.mi_cap is not None and not (math.isfinite(self.mi_cap) and self.mi_cap > 0):
            raise ValueError(f"mi_cap must be a positive number or null, got {quote(self.mi_cap)}")
        if self.group_by not in GROUP_BY:
            raise ValueError(
                f"group_by: {quote(self.group_by)} is not one of {', '.join(GROUP_BY)}"
            )
        if self.group_by == "skill" and self.completions_per_skill < 2:
            raise ValueError(
                "group_by: skill needs completions_per_skill >= 2 (a group of one rollout "
                "has no advantage)"
            )
        if "{i}" not in self.prefix_format:
            raise ValueError("prefix_format must contain {i} (the 0-based skill index)")


def skill_messages(messages: Messages, prefix: str) -> Messages:
    """The prompt with the skill prefix in front of its last (user) message: the layout of
    cppo_bench.methods.skills.skill_messages, so training and evaluation prompts agree."""
    last = dict(messages[-1])
    last["content"] = f"{prefix}\n{last['content']}"
    return (*messages[:-1], last)


def _skills(scored: Sequence[Scored]) -> torch.Tensor:
    """The skill index each rollout was sampled under."""
    return torch.tensor([int(s.rollout.request.meta["skill"]) for s in scored])


class UpSkill(Algorithm):
    name = "upskill"
    Config = UpSkillConfig

    def _skill_request(self, problem: Problem, ctx: StepContext, z: int, i: int) -> RolloutRequest:
        cfg = self.config
        prefix = cfg.prefix_format.format(i=z)
        return RolloutRequest(
            problem,
            ctx.seed_for(problem, f"skill{z}", i),
            messages=skill_messages(ctx.prompt(problem), prefix),
            kind="skill",
            group=problem.uid,
            meta={"skill": z},
            stop=ctx.stop,
        )

    def requests(self, problem: Problem, ctx: StepContext) -> list[RolloutRequest]:
        cfg = self.config
        return [
            self._skill_request(problem, ctx, z, i)
            for i in range(cfg.completions_per_skill)
            for z in range(cfg.n_skills)
        ]

    def rollouts_per_prompt(self) -> int:
        return self.config.n_skills * self.config.completions_per_skill

    def mi(self, scored: Sequence[Scored], ctx: StepContext) -> torch.Tensor:
        """r_MI of every rollout: its completion scored under every skill's prompt."""
        cfg = self.config
        pairs = []
        for s in scored:
            problem = s.rollout.request.problem
            for z in range(cfg.n_skills):
                prompt_ids = ctx.encode(self._skill_request(problem, ctx, z, 0))
                pairs.append((prompt_ids, s.rollout.completion_ids))
        per_token = ctx.completion_logprobs(pairs)
        width = max((len(t) for t in per_token), default=0)
        lp = torch.zeros(len(scored), cfg.n_skills, max(width, 1), dtype=torch.float64)
        mask = torch.zeros(len(scored), max(width, 1))
        for j, t in enumerate(per_token):
            b, z = divmod(j, cfg.n_skills)
            lp[b, z, : len(t)] = t.to(torch.float64)
            mask[b, : len(t)] = 1
        return mi_reward(lp, _skills(scored), mask, level=cfg.mi_level)

    def alpha_at(self, step: int) -> float:
        """The MI weight of a 0-based step: 0 during the warm-up, alpha_mi after it."""
        cfg = self.config
        return 0.0 if step < cfg.mi_warmup_steps else cfg.alpha_mi

    def rows(self, scored: Sequence[Scored], ctx: StepContext) -> StepRows:
        correct, groups = group_tensors(scored)
        r_mi = self.mi(scored, ctx) if scored else torch.zeros(0)
        alpha = self.alpha_at(ctx.step)
        combined = upskill_reward(correct, r_mi, alpha, cap=self.config.mi_cap).to(torch.float64)
        if self.config.group_by == "skill":
            groups = groups * self.config.n_skills + _skills(scored)
        adv = group_normalised_advantages(
            combined, groups, scale=self.config.scale_rewards == "group"
        )
        return StepRows(
            response_rows(scored, adv.tolist()),
            {
                "reward": correct.tolist(),
                "r_correct": correct.tolist(),
                "r_mi": r_mi.tolist(),
                "combined_reward": combined.tolist(),
                "alpha_mi": [alpha],
                "adv_nonzero": [float(a != 0) for a in adv.tolist()],
                "group_live": group_stats(correct, groups, adv),
            },
        )
