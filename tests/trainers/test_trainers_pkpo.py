"""PKPO transforms and pass@k-RL advantages against brute-force k-subset enumeration and the
published values."""

from __future__ import annotations

import math
from itertools import combinations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.core.passk_rl import passk_advantage_values, passk_advantages, passk_group_reward
from trainers.core.pkpo import (
    binom_ratio,
    maxg_at_k,
    pass_at_k_rho,
    pkpo_s,
    pkpo_sloo,
    pkpo_sloo_minus_one,
    pkpo_transform,
)

# ---- brute force: literal averages over all k-subsets -------------------------------------


def bf_rho(g: list[float], k: int) -> float:
    subsets = list(combinations(range(len(g)), k))
    return sum(max(g[j] for j in s) for s in subsets) / len(subsets)


def bf_s(g: list[float], k: int) -> list[float]:
    total = math.comb(len(g), k)
    return [
        sum(max(g[j] for j in s) for s in combinations(range(len(g)), k) if i in s) / total
        for i in range(len(g))
    ]


def bf_sloo(g: list[float], k: int) -> list[float]:
    # s_i minus the average over j != i of s_j computed on the n-1 samples without i
    s = bf_s(g, k)
    out = []
    for i in range(len(g)):
        rest = g[:i] + g[i + 1 :]
        out.append(s[i] - sum(bf_s(rest, k)) / (len(g) - 1))
    return out


def bf_sloo_minus_one(g: list[float], k: int) -> list[float]:
    # every k-subset holding i, baselined by the max of the same subset without i; at k = 1
    # that subset is empty and, as in the public PKPO code, its max counts as 0
    total = math.comb(len(g), k)
    out = []
    for i in range(len(g)):
        acc = 0.0
        for s in combinations(range(len(g)), k):
            if i in s:
                acc += max(g[j] for j in s) - max((g[j] for j in s if j != i), default=0.0)
        out.append(acc / total)
    return out


def t64(g: list[float]) -> torch.Tensor:
    return torch.tensor(g, dtype=torch.float64)


binary_rewards = st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=9)
# a small value pool forces ties, which exercise the rank bookkeeping
continuous_rewards = st.lists(
    st.one_of(
        st.sampled_from([0.0, 0.25, 0.5, 1.0]),
        st.floats(-3, 3, allow_nan=False, allow_infinity=False),
    ),
    min_size=1,
    max_size=9,
)


@settings(max_examples=150, deadline=None)
@given(g=st.one_of(binary_rewards, continuous_rewards), data=st.data())
def test_transforms_equal_brute_force(g: list[float], data: st.DataObject) -> None:
    n = len(g)
    k = data.draw(st.integers(1, n))
    assert float(maxg_at_k(t64(g), k)) == pytest.approx(bf_rho(g, k), abs=1e-9)
    assert pkpo_s(t64(g), k).tolist() == pytest.approx(bf_s(g, k), abs=1e-9)
    # SLOO at k = n: no k-subset of the n-1 others, the public code falls back to s
    sloo = bf_sloo(g, k) if k < n else bf_s(g, k)
    assert pkpo_sloo(t64(g), k).tolist() == pytest.approx(sloo, abs=1e-9)
    got = pkpo_sloo_minus_one(t64(g), k).tolist()
    assert got == pytest.approx(bf_sloo_minus_one(g, k), abs=1e-9)


@pytest.mark.parametrize("n", range(1, 10))
def test_every_n_k_pair_on_a_fixed_continuous_vector(n: int) -> None:
    # deterministic sweep so every (n <= 9, k) pair is covered, whatever hypothesis draws
    g = [((7 * i) % 5) / 4 - 0.3 * (i % 2) for i in range(n)]
    for k in range(1, n + 1):
        assert pkpo_s(t64(g), k).tolist() == pytest.approx(bf_s(g, k), abs=1e-12)
        sloo = bf_sloo(g, k) if k < n else bf_s(g, k)
        assert pkpo_sloo(t64(g), k).tolist() == pytest.approx(sloo, abs=1e-12)
        assert pkpo_sloo_minus_one(t64(g), k).tolist() == pytest.approx(
            bf_sloo_minus_one(g, k), abs=1e-12
        )


@pytest.mark.parametrize(("c", "rho"), [(1, 0.25), (2, 0.45), (4, 0.72802)])
def test_binary_pass_at_k_values(c: int, rho: float) -> None:
    assert pass_at_k_rho(16, c, 4) == pytest.approx(rho, abs=5e-6)
    g = torch.zeros(16, dtype=torch.float64)
    g[:c] = 1
    assert float(maxg_at_k(g, 4)) == pytest.approx(rho, abs=5e-6)


@pytest.mark.parametrize(("c", "value"), [(1, 0.25), (2, 0.2), (4, 0.12088), (8, 0.03077)])
def test_sloo_minus_one_binary_values(c: int, value: float) -> None:
    g = torch.zeros(16, dtype=torch.float64)
    g[torch.randperm(16, generator=torch.Generator().manual_seed(c))[:c]] = 1
    out = pkpo_sloo_minus_one(g, 4)
    closed = (4 / 16) * math.comb(16 - c, 3) / math.comb(15, 3)
    assert out[g == 1].tolist() == pytest.approx([value] * c, abs=5e-6)
    assert out[g == 1].tolist() == pytest.approx([closed] * c, abs=1e-12)
    assert (out[g == 0] == 0).all(), "a failed sample must get exactly zero"


def test_worked_example_and_no_renormalisation() -> None:
    g = t64([1, 0, 1, 0, 0])
    assert pkpo_s(g, 3).tolist() == pytest.approx([0.6, 0.5, 0.6, 0.5, 0.5], abs=1e-12)
    assert pkpo_sloo(g, 3).tolist() == pytest.approx([0.0375, -0.25, 0.0375, -0.25, -0.25])
    sloo1 = pkpo_sloo_minus_one(g, 3)
    assert sloo1.tolist() == pytest.approx([0.3, 0, 0.3, 0, 0], abs=1e-12)
    assert float(sloo1.sum()) != pytest.approx(0.0), "outputs are not zero-mean by design"


def test_large_n_is_finite_and_stable() -> None:
    # C(512, 256) overflows float64; the product forms must not
    g = torch.zeros(512, dtype=torch.float64)
    g[:3] = 1
    out = pkpo_sloo_minus_one(g, 256)
    assert torch.isfinite(out).all()
    assert float(out[0]) == pytest.approx(256 / 512 * float(binom_ratio(509, 511, 255)), rel=1e-12)
    assert torch.isfinite(pkpo_sloo(torch.rand(512, dtype=torch.float64), 256)).all()


def test_grouped_transform_and_argument_errors() -> None:
    r = torch.tensor([1.0, 0, 1, 0, 0, 0.0, 1, 1])
    ids = torch.tensor([0, 0, 0, 0, 0, 7, 7, 7])
    out = pkpo_transform(r, ids, 3)
    assert out[:5].tolist() == pytest.approx([0.3, 0, 0.3, 0, 0], abs=1e-6)
    assert out[5:].tolist() == pytest.approx(pkpo_sloo_minus_one(r[5:], 3).tolist())
    with pytest.raises(ValueError, match="k < n"):
        pkpo_sloo(t64([1, 0]), 2, "loo")
    with pytest.raises(ValueError, match="edge cases"):
        pkpo_sloo(t64([1, 0]), 1, "strict")
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pkpo_s(t64([1, 0]), 3)
    with pytest.raises(ValueError, match="unknown PKPO estimator"):
        pkpo_transform(r, ids, 3, "mean")  # type: ignore[arg-type]


def test_edge_cases_public_by_default_and_loo_as_an_option() -> None:
    g = [1.0, 0.0, 0.5, 0.25]
    # k = 1, public: SLOO-1 has no baseline, s_i = g_i / n; option "loo": SLOO's (RLOO / n)
    assert pkpo_sloo_minus_one(t64(g), 1).tolist() == pytest.approx([x / 4 for x in g])
    assert pkpo_sloo_minus_one(t64(g), 1, "loo").tolist() == pytest.approx(bf_sloo(g, 1))
    r, ids = t64(g), torch.zeros(4, dtype=torch.long)
    assert pkpo_transform(r, ids, 1).tolist() == pytest.approx([x / 4 for x in g])
    assert pkpo_transform(r, ids, 1, edge="loo").tolist() == pytest.approx(bf_sloo(g, 1))
    # k = n: SLOO falls back to s (every sample gets max g), the option refuses
    assert pkpo_sloo(t64(g), 4).tolist() == pytest.approx([1.0] * 4)
    from trainers.algorithms.pkpo import PKPOConfig

    assert PKPOConfig().edge_cases == "public"
    with pytest.raises(ValueError, match="edge_cases"):
        PKPOConfig(edge_cases="none")


# ---- pass@k-RL (Chen et al. 2025) -------------------------------------------------------


@pytest.mark.parametrize(("c", "a_pos", "a_neg"), [(1, 1.7320, -0.1155), (8, 0.2, -0.2)])
def test_passk_rl_published_values(c: int, a_pos: float, a_neg: float) -> None:
    got_pos, got_neg = passk_advantage_values(16, 16 - c, 4)
    assert got_pos == pytest.approx(a_pos, abs=1e-4)
    assert got_neg == pytest.approx(a_neg, abs=1e-4)


@settings(max_examples=100, deadline=None)
@given(g=st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=12), data=st.data())
def test_passk_rl_equals_rescaled_pkpo_s(g: list[float], data: st.DataObject) -> None:
    n = len(g)
    k = data.draw(st.integers(1, n))
    adv = passk_advantages(t64(g), torch.zeros(n, dtype=torch.long), k)
    rho = passk_group_reward(n, n - int(sum(g)), k)
    assert rho == pytest.approx(pass_at_k_rho(n, int(sum(g)), k))
    sigma = math.sqrt(rho * (1 - rho))
    if sigma < 1e-12:
        assert (adv == 0).all()
    else:
        # the released code divides by sigma + 1e-6
        expected = ((n / k) * pkpo_s(t64(g), k) - rho) / (sigma + 1e-6)
        assert adv.tolist() == pytest.approx(expected.tolist(), abs=1e-9)


def test_passk_rl_degenerate_groups_and_binary_check() -> None:
    r = torch.tensor([0.0, 0, 0, 0, 1, 1, 1, 1])
    ids = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    assert (passk_advantages(r, ids, 2) == 0).all()
    with pytest.raises(ValueError, match="binary"):
        passk_advantages(torch.tensor([0.5, 1.0]), torch.tensor([0, 0]), 1)
