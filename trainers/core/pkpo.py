"""PKPO reward transforms (Walder & Karkhanis 2025, "Pass@K Policy Optimization").

For one prompt with n i.i.d. samples and rewards g_1..g_n, the transforms map the reward vector
to per-sample weights whose policy gradient sum_i w_i grad log p(x_i) is an unbiased estimate of
grad maxg@k = grad E[max of k samples]. Binary rewards (pass@k) are the special case g in {0,1}.

Every quantity is an average over all C(n,k) k-subsets, computed in closed form on the sorted
rewards: the weight of a sample depends only on its rank. Ratios of binomials are evaluated as
products of factors <= 1 (``binom_ratio``) so nothing overflows for any n.

The outputs are NOT zero-mean and must not be re-normalised (doing so breaks unbiasedness and
changes the objective); feed them to the policy loss as advantages as they are.

Edge cases, ``edge="public"`` (default) as the public PKPO code does them: SLOO-1 at k = 1 is
s_i = g_i / n (the max of the empty (k-1)-subset is taken as 0: no baseline), and SLOO at k = n
falls back to s (the n-1 other samples hold no k-subset to baseline with). ``edge="loo"`` is
this project's earlier choice, kept as an option: SLOO-1 at k = 1 uses the leave-one-out
baseline (SLOO at k = 1, i.e. RLOO / n), and SLOO at k = n is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import Tensor

from trainers.harness import quote

Estimator = Literal["s", "sloo", "sloo_minus_one"]
EDGE_CASES = ("public", "loo")


def binom_ratio(a: Tensor | int, b: int, r: int) -> Tensor:
    # C(a, r) / C(b, r) = prod_{t<r} (a-t)/(b-t), zero where a < r (no r-subset of a items).
    a_t = torch.as_tensor(a, dtype=torch.float64)
    if r <= 0:
        return torch.ones_like(a_t)
    t = torch.arange(r, dtype=torch.float64)
    factors = (a_t.unsqueeze(-1) - t) / (float(b) - t)
    return torch.where(a_t >= r, factors.prod(-1), torch.zeros_like(a_t))


def pass_at_k_rho(n: int, c: int, k: int) -> float:
    # PKPO Eq. rho-binary: rho(n, c, k) = 1 - C(n-c, k) / C(n, k)
    _check_nk(n, k)
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    return float(1.0 - binom_ratio(n - c, n, k))


def _rank_weights(m: int, k: int) -> Tensor:
    # PKPO Eq. mu: weight of the (q+1)-th smallest of m rewards in maxg@k, C(q, k-1) / C(m, k)
    q = torch.arange(m, dtype=torch.float64)
    return (k / m) * binom_ratio(q, m - 1, k - 1)


def _pair_weights(n: int, k: int, p: Tensor) -> Tensor:
    # PKPO Eq. s (off-diagonal): C(p, k-2) / C(n, k), the share of k-subsets holding a given
    # sample and a sample of 0-indexed rank p+1 that is their maximum
    if k < 2:
        return torch.zeros_like(p, dtype=torch.float64)
    return (k * (k - 1) / (n * (n - 1))) * binom_ratio(p, n - 2, k - 2)


def _sorted(g: Tensor) -> tuple[Tensor, Tensor]:
    if g.dim() != 1 or g.numel() == 0:
        raise ValueError(f"rewards must be a non-empty 1-D tensor, got shape {tuple(g.shape)}")
    if not torch.isfinite(g).all():
        raise ValueError("rewards contain NaN or inf")
    order = torch.argsort(g.to(torch.float64), stable=True)
    return g.to(torch.float64)[order], order


def _unsort(values: Tensor, order: Tensor, like: Tensor) -> Tensor:
    out = torch.empty_like(values)
    out[order] = values
    return out.to(like.dtype if like.is_floating_point() else torch.float32)


def _check_nk(n: int, k: int) -> None:
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def maxg_at_k(g: Tensor, k: int) -> Tensor:
    # PKPO Eq. rho-g: rho^(g) = (1/C(n,k)) sum_{|I|=k} max_{i in I} g_i = sum_q mu_q g_(q)
    gs, _ = _sorted(g)
    _check_nk(gs.numel(), k)
    return (_rank_weights(gs.numel(), k) * gs).sum()


def _s_sorted(gs: Tensor, k: int) -> Tensor:
    # PKPO Eq. s: s_(q) = mu_q g_(q) + sum_{j>q} nu_j g_(j)  (suffix sum over larger rewards)
    n = gs.numel()
    nu_g = _pair_weights(n, k, torch.arange(n, dtype=torch.float64) - 1) * gs
    suffix = torch.flip(torch.cumsum(torch.flip(nu_g, [0]), 0), [0]) - nu_g
    return _rank_weights(n, k) * gs + suffix


def _loo_maxg_sorted(gs: Tensor, k: int) -> Tensor:
    # PKPO Eq. LOO-baseline: entry p is maxg@k of the n-1 rewards without the p-th smallest
    n = gs.numel()
    mu = _rank_weights(n - 1, k)
    zero = gs.new_zeros(1)
    left = torch.cat([zero, torch.cumsum(mu * gs[:-1], 0)])  # ranks below p keep their rank
    t = mu * gs[1:]  # ranks above p move down by one
    right = torch.cat([torch.flip(torch.cumsum(torch.flip(t, [0]), 0), [0]), zero])
    return left + right


def _check_edge(edge: str) -> None:
    if edge not in EDGE_CASES:
        raise ValueError(f"PKPO edge cases: {quote(edge)} is not one of {EDGE_CASES}")


def pkpo_s(g: Tensor, k: int, edge: str = "public") -> Tensor:
    # PKPO Eq. s: s_i = (1/C(n,k)) sum_{|I|=k, i in I} max_{j in I} g_j
    """``edge`` is accepted for a uniform signature: s has no edge case."""
    _check_edge(edge)
    gs, order = _sorted(g)
    _check_nk(gs.numel(), k)
    return _unsort(_s_sorted(gs, k), order, g)


def pkpo_sloo(g: Tensor, k: int, edge: str = "public") -> Tensor:
    # PKPO Eq. SLOO: s_i - (1/(n-1)) sum_{j!=i} s_j(g without i) = s_i - k/(n-1) rho^(g)_k(g_-i)
    _check_edge(edge)
    gs, order = _sorted(g)
    n = gs.numel()
    _check_nk(n, k)
    if k >= n:
        if edge == "public":  # the public code: no k-subset of the n-1 others, so plain s
            return pkpo_s(g, k)
        raise ValueError(f"SLOO needs k < n (the baseline uses n-1 samples), got k={k}, n={n}")
    out = _s_sorted(gs, k) - (k / (n - 1)) * _loo_maxg_sorted(gs, k)
    return _unsort(out, order, g)


def pkpo_sloo_minus_one(g: Tensor, k: int, edge: str = "public") -> Tensor:
    # PKPO Eq. SLOO-1: (1/C(n,k)) sum_{I ni i} [max g_I - max g_(I-i)] = s_i - (k/n) rho_{k-1}(g_-i)
    _check_edge(edge)
    gs, order = _sorted(g)
    n = gs.numel()
    _check_nk(n, k)
    if k == 1:
        if edge == "public":  # the public code: the empty subset's max is 0, s_i = g_i / n
            return pkpo_s(g, k)
        # option "loo": the leave-one-out baseline of SLOO at k = 1 (RLOO / n)
        if n == 1:
            raise ValueError("k = 1 with a single sample has no leave-one-out baseline")
        return pkpo_sloo(g, k, edge)
    # Only subsets where i is the top-ranked member contribute, so on sorted rewards
    # out_(q) = [C(q, k-1) g_(q) - sum_{p<q} C(p, k-2) g_(p)] / C(n, k). This prefix form keeps a
    # reward tied with everything below it (e.g. every failure in a binary group) exactly 0.
    nu_g = _pair_weights(n, k, torch.arange(n, dtype=torch.float64)) * gs
    below = torch.cumsum(nu_g, 0) - nu_g
    out = _rank_weights(n, k) * gs - below
    return _unsort(out, order, g)


ESTIMATORS: dict[str, Callable[[Tensor, int, str], Tensor]] = {
    "s": pkpo_s,
    "sloo": pkpo_sloo,
    "sloo_minus_one": pkpo_sloo_minus_one,
}


def pkpo_transform(
    rewards: Tensor,
    group_ids: Tensor,
    k: int,
    estimator: Estimator = "sloo_minus_one",
    edge: str = "public",
) -> Tensor:
    # PKPO Eq. SLOO-1 (default) applied independently within each prompt group
    if estimator not in ESTIMATORS:
        raise ValueError(
            f"unknown PKPO estimator {quote(estimator)}; choose one of {sorted(ESTIMATORS)}"
        )
    if rewards.shape != group_ids.shape or rewards.dim() != 1:
        raise ValueError("rewards and group_ids must be 1-D tensors of the same length")
    fn = ESTIMATORS[estimator]
    out = torch.empty(rewards.shape, dtype=torch.float64)
    for gid in torch.unique(group_ids):
        idx = (group_ids == gid).nonzero(as_tuple=True)[0]
        out[idx] = fn(rewards[idx].to(torch.float64), k, edge)
    return out.to(rewards.dtype if rewards.is_floating_point() else torch.float32)
