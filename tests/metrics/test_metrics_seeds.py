"""Per-seed differences with a Student-t interval, and mean +- std of table cells."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from cppo_bench.metrics import mean_std, paired_seed_deltas, seed_difference_ci


@pytest.mark.parametrize(
    ("deltas", "mean", "low", "high"),
    [
        ((0.010, 0.021, 0.038), 0.023, -0.012, 0.058),  # rows of the study's per-seed table
        ((0.194, 0.207, 0.232), 0.211, 0.163, 0.259),
    ],
)
def test_study_rows(deltas, mean, low, high):
    ci = seed_difference_ci(deltas)
    assert (round(ci.mean, 3), round(ci.low, 3), round(ci.high, 3)) == (mean, low, high)
    assert str(ci) == f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=10),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_matches_scipy_t_interval(deltas, confidence):
    """Against scipy's own t.interval with the standard error from scipy.stats.sem."""
    ci = seed_difference_ci(deltas, confidence)
    mean = statistics.fmean(deltas)
    sem = stats.sem(deltas)
    if sem == 0 or not math.isfinite(sem):
        assert ci.low == pytest.approx(mean) and ci.high == pytest.approx(mean)
        return
    lo, hi = stats.t.interval(confidence, len(deltas) - 1, loc=mean, scale=sem)
    assert ci.mean == pytest.approx(mean, abs=1e-12)
    assert ci.low == pytest.approx(lo, abs=1e-9)
    assert ci.high == pytest.approx(hi, abs=1e-9)


def test_interval_needs_two_seeds():
    with pytest.raises(ValueError):
        seed_difference_ci([0.1])


def test_paired_deltas_match_seeds():
    got = paired_seed_deltas({0: 0.5, 1: 0.6, 2: 0.7}, {2: 0.4, 0: 0.45, 5: 0.1})
    assert got.tolist() == pytest.approx([0.05, 0.3])
    with pytest.raises(ValueError):
        paired_seed_deltas({0: 1.0}, {1: 1.0})


def test_mean_std_trained_is_sample_std_over_seed_scores():
    scores = np.array([[1, 0, 1, 1], [0, 0, 1, 1], [1, 1, 1, 1]], dtype=float)  # 3 seeds
    cell = mean_std(scores, trained=True)
    seed_means = [0.75, 0.5, 1.0]
    assert cell.mean == pytest.approx(0.75)
    assert cell.std == pytest.approx(statistics.stdev(seed_means))  # ddof=1
    assert cell.std != pytest.approx(statistics.pstdev(seed_means))
    assert (cell.n, cell.over) == (3, "seeds")


def test_mean_std_inference_only_is_spread_over_problems():
    outcomes = [1, 0, 0, 1, 1]
    cell = mean_std([outcomes], trained=False, inference_spread="std")
    assert cell.mean == pytest.approx(0.6)
    assert cell.std == pytest.approx(statistics.stdev(outcomes))
    se = mean_std([outcomes], trained=False)  # default: bootstrap s.e. of the mean
    assert se.kind == "bootstrap_se" and se.std < cell.std
    assert (cell.n, cell.over) == (5, "problems")
    with pytest.raises(ValueError):
        mean_std([[1, 0], [0, 1]], trained=False)
    assert mean_std([[0.4, 0.6]], trained=True).std == 0.0  # one seed: no spread
