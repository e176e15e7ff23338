"""Analytic pass@k advantages (Chen et al. 2025, "Pass@k Training for Adaptively Balancing
Exploration and Exploitation of Large Reasoning Models").

For a group of N binary rollouts with N_neg failures, the group's pass@k reward is
R = 1 - C(N_neg, k) / C(N, k) and its standard deviation sigma = sqrt(R (1 - R)). Every correct
rollout gets A_pos and every failed one A_neg, in closed form (no subset sampling). These equal
((N/k) s_i - R) / sigma with s_i the PKPO gradient weights, which the tests check.

Groups whose sigma is zero (all fail, all pass, or fewer than k failures so every k-subset
passes) carry no contrast and get advantage 0. As the released code (RUCAIBox/Passk_Training,
code/passk_adv.py) does, the divisor is sigma + 1e-6 (``SIGMA_EPS``); its degenerate groups
come out 0 as here.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from trainers.core.pkpo import binom_ratio

SIGMA_EPS = 1e-6  # the released code's sigma + 1e-6


def passk_group_reward(n: int, n_neg: int, k: int) -> float:
    # Chen et al. Eq. R-group: R = 1 - C(N_neg, k) / C(N, k)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= N, got k={k}, N={n}")
    if not 0 <= n_neg <= n:
        raise ValueError(f"need 0 <= N_neg <= N, got N_neg={n_neg}, N={n}")
    return float(1.0 - binom_ratio(n_neg, n, k))


def passk_advantage_values(n: int, n_neg: int, k: int) -> tuple[float, float]:
    # Chen et al. Eq. A_pos and Eq. A_neg: returns (A_pos, A_neg) for one group
    r = passk_group_reward(n, n_neg, k)
    sigma = math.sqrt(max(r * (1.0 - r), 0.0))
    if sigma < 1e-12:
        return 0.0, 0.0
    a_pos = (1.0 - r) / (sigma + SIGMA_EPS)
    # C(N_neg-1, k-1) / C(N-1, k-1): share of the (k-1)-subsets of the others that all fail
    others_fail = float(binom_ratio(n_neg - 1, n - 1, k - 1)) if n_neg >= 1 else 0.0
    a_neg = (1.0 - r - others_fail) / (sigma + SIGMA_EPS)
    return a_pos, a_neg


def passk_advantages(rewards: Tensor, group_ids: Tensor, k: int) -> Tensor:
    # Chen et al. Eq. A_pos / Eq. A_neg broadcast to every rollout of each group
    if rewards.dim() != 1 or rewards.shape != group_ids.shape:
        raise ValueError("rewards and group_ids must be 1-D tensors of the same length")
    r = rewards.to(torch.float64)
    if not torch.all((r == 0) | (r == 1)):
        raise ValueError("pass@k-RL advantages need binary rewards (0 or 1); use PKPO for others")
    out = torch.zeros_like(r)
    for gid in torch.unique(group_ids):
        idx = (group_ids == gid).nonzero(as_tuple=True)[0]
        correct = r[idx] == 1
        n = idx.numel()
        a_pos, a_neg = passk_advantage_values(n, n - int(correct.sum()), k)
        values = torch.tensor([a_neg, a_pos], dtype=torch.float64)
        out[idx] = values[correct.long()]
    return out.to(rewards.dtype if rewards.is_floating_point() else torch.float32)
