"""UpSkill (Shah et al. 2026) mutual-information reward.

Each rollout is generated under one of n_skills skill prefixes z (the trainer enumerates them:
one completion per skill per prompt). The same response y is then scored under every prefix z';
the MI reward is how much more likely y is under its own skill than under the average skill,
at the sequence level as the released UpSkill code computes it, p(y | .) being the product over
the response's tokens:

    r_MI = log p(y | x, z) - log (1/n) sum_z' p(y | x, z')          (level="sequence", default)

The token-level variant averages over skills inside the token sum instead; it is a different
quantity (a sum of per-token logsumexps is not the logsumexp of the sums) kept as an option:

    r_MI = sum_t [ log pi(y_t | x, z, y_<t) - log (1/n) sum_z' pi(y_t | x, z', y_<t) ]

Both means are logsumexps, so nothing underflows. The training reward is
r = correctness + alpha_mi * r_MI with alpha_mi = 5.0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from trainers.harness import quote

N_SKILLS = 4
ALPHA_MI = 5.0


def sample_skills(n: int, n_skills: int = N_SKILLS, seed: int = 0) -> Tensor:
    # UpSkill Eq. z-prior: z ~ Uniform{0..n_skills-1}, seeded so a run's skill draws are replayable
    if n_skills < 1:
        raise ValueError(f"n_skills must be >= 1, got {n_skills}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, n_skills, (n,), generator=gen)


MI_LEVELS = ("sequence", "token")


def enumerate_skills(n: int, n_skills: int = N_SKILLS) -> Tensor:
    # UpSkill at K = n_skills: one completion per skill, z_i = i mod n_skills (no random draws)
    if n_skills < 1:
        raise ValueError(f"n_skills must be >= 1, got {n_skills}")
    return torch.arange(n) % n_skills


def mi_reward(
    skill_logprobs: Tensor, skill: Tensor, mask: Tensor, level: str = "sequence"
) -> Tensor:
    # UpSkill Eq. MI: log p(y|x,z) - log mean_z' p(y|x,z') (sequence) or its token-level variant
    """skill_logprobs: (B, n_skills, T) log-probs of each response's tokens under every skill
    prefix; skill: (B,) the prefix each response was sampled with; mask: (B, T) response tokens.
    level: "sequence" (the released code's, default) or "token" (mean over skills per token)."""
    if level not in MI_LEVELS:
        raise ValueError(f"MI level must be one of {MI_LEVELS}, got {quote(level)}")
    if skill_logprobs.dim() != 3:
        raise ValueError(
            f"skill_logprobs must be (B, n_skills, T), got {tuple(skill_logprobs.shape)}"
        )
    b, n_skills, t = skill_logprobs.shape
    if skill.shape != (b,) or mask.shape != (b, t):
        raise ValueError("skill must be (B,) and mask (B, T) matching skill_logprobs")
    if bool(((skill < 0) | (skill >= n_skills)).any()):
        raise ValueError(f"skill index out of range [0, {n_skills})")
    lp = skill_logprobs.to(torch.float64) * mask.to(torch.float64).unsqueeze(1)
    if level == "sequence":
        seq = lp.sum(-1)  # (B, n_skills): log p(y | x, z') = sum over the response's tokens
        own_seq = seq.gather(1, skill.view(b, 1)).squeeze(1)
        return (own_seq - (torch.logsumexp(seq, dim=1) - math.log(n_skills))).to(torch.float32)
    own = lp.gather(1, skill.view(b, 1, 1).expand(b, 1, t)).squeeze(1)
    log_mean = torch.logsumexp(lp, dim=1) - math.log(n_skills)
    per_token = (own - log_mean) * mask.to(torch.float64)
    return per_token.sum(-1).to(torch.float32)


def upskill_reward(
    correct: Tensor, mi: Tensor, alpha_mi: float = ALPHA_MI, cap: float | None = None
) -> Tensor:
    # UpSkill Eq. total-reward: r = r_correct + alpha_mi * r_MI; with `cap` (the released toy
    # code's --cap) the MI term is clamped first: r = r_correct + clamp(alpha_mi r_MI, +-cap)
    weighted = alpha_mi * mi.to(torch.float32)
    if cap is not None:
        weighted = weighted.clamp(-cap, cap)
    return correct.to(torch.float32) + weighted
