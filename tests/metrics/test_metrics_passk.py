"""pass@K: the unbiased estimator against brute-force enumeration of subsets, and the first-K
rule of ordered rollouts against direct counting."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cppo_bench.metrics import (
    benchmark_pass_at_k,
    pass_at_k,
    pass_at_k_first,
    pass_at_k_unbiased,
    selection_mask,
)
from cppo_bench.metrics.passk import pass_at_k_exact


def brute_force_pass_at_k(outcomes: list[bool], k: int) -> float:
    """Share of all k-subsets of the samples that contain at least one pass."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=10), st.data())
def test_unbiased_matches_subset_enumeration(outcomes, data):
    k = data.draw(st.integers(1, len(outcomes)))
    n, c = len(outcomes), sum(outcomes)
    assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(outcomes, k), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.data()), min_size=1, max_size=8))
def test_vectorised_equals_scalar(pairs):
    ns = [n for n, _ in pairs]
    cs = [d.draw(st.integers(0, n)) for n, d in pairs]
    k = min(ns)
    vec = pass_at_k(np.array(ns), np.array(cs), k)
    assert vec.shape == (len(ns),)
    for v, n, c in zip(vec, ns, cs, strict=True):
        assert v == pytest.approx(pass_at_k_exact(n, c, k), abs=1e-12)


def test_stable_for_large_n():
    # C(5000, 200) overflows a float; the product form does not.
    value = pass_at_k(5000, 37, 200)
    assert 0.0 < value < 1.0
    assert value == pytest.approx(pass_at_k_exact(5000, 37, 200), rel=1e-9)
    assert pass_at_k(5000, 0, 200) == 0.0
    assert pass_at_k(5000, 4801, 200) == 1.0  # fewer than k failures: every subset has a pass


def test_known_values():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(4, 1, 4) == 1.0
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 4, 1), (3, -1, 1), (3, 1, 0)])
def test_rejects_invalid(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_unbiased_per_problem_ragged():
    rows = [[True, False, False], [False, False, False, False], [True] * 5]
    got = pass_at_k_unbiased(rows, 2)
    assert got.tolist() == pytest.approx([brute_force_pass_at_k(r, 2) for r in rows])
    assert benchmark_pass_at_k(got) == pytest.approx(np.mean(got))


def direct_first_k(rollout: list[bool], k: int, select: str, picks: list[int] | None) -> bool:
    """The rule written out: full tuples, then first / last / picked r of the last tuple."""
    tuples = [rollout[i : i + 4] for i in range(0, len(rollout), 4)]
    m = math.ceil(k / 4)
    counted = [x for t in tuples[: m - 1] for x in t]
    r = k - 4 * (m - 1)
    last = tuples[m - 1]
    if select == "first":
        counted += last[:r]
    elif select == "last":
        counted += last[4 - r :]
    else:
        counted += [last[j] for j in picks or []]
    return any(counted)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 12),
    st.sampled_from(["first", "last"]),
    st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=1, max_size=6),
)
def test_first_k_rule_matches_direct_counting(k, select, rollouts):
    got = pass_at_k_first(rollouts, k, select)
    expected = [float(direct_first_k(r, k, select, None)) for r in rollouts]
    assert got.tolist() == expected


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 8),
    st.lists(st.lists(st.booleans(), min_size=8, max_size=8), min_size=1, max_size=5),
)
def test_random_select_counts_the_masked_branches(k, rollouts):
    mask = selection_mask(len(rollouts), k, "random", seed=7)
    assert mask.sum(axis=1).tolist() == [k] * len(rollouts)  # exactly K branches count
    full = 4 * (math.ceil(k / 4) - 1)
    got = pass_at_k_first(rollouts, k, "random", seed=7)  # same seed: the same mask
    for row, rollout, value in zip(mask, rollouts, got, strict=True):
        picks = [j for j in range(4) if row[full + j]]
        assert row[:full].all()
        assert bool(value) == direct_first_k(rollout, k, "random", picks)


def test_random_select_is_seeded_and_varies():
    rollouts = np.eye(4, dtype=bool)[np.arange(200) % 4]  # one passing branch per problem
    a = pass_at_k_first(rollouts, 1, "random", seed=3)
    assert np.array_equal(a, pass_at_k_first(rollouts, 1, "random", seed=3))
    assert not np.array_equal(a, pass_at_k_first(rollouts, 1, "random", seed=4))
    assert 0.15 < a.mean() < 0.35  # one branch of four, picked at random


def test_first_and_last_differ_on_a_tuple():
    rollout = [[False, False, True, False]]
    assert pass_at_k_first(rollout, 2, "first").tolist() == [0.0]
    assert pass_at_k_first(rollout, 2, "last").tolist() == [1.0]
    assert pass_at_k_first(rollout, 4, "first").tolist() == [1.0]


def test_pooling_needs_enough_tuples():
    with pytest.raises(ValueError, match="8 are needed"):
        pass_at_k_first([[True] * 4], 5, "last")
    # K=5 pools two tuples: the second tuple's first branch counts under "first"
    assert pass_at_k_first([[False] * 4 + [True, False, False, False]], 5).tolist() == [1.0]
    assert pass_at_k_first([[False] * 4 + [False, True, False, False]], 5).tolist() == [0.0]
    assert pass_at_k_first([[False] * 4 + [False, False, False, True]], 5, "last").tolist() == [1.0]


def test_unknown_select():
    with pytest.raises(ValueError, match="select"):
        pass_at_k_first([[True] * 4], 2, "middle")
