"""Token accounting and the study's pass@K per 10k decoded tokens column."""

from __future__ import annotations

import numpy as np
import pytest

from cppo_bench.metrics import pass_per_10k_tokens, summarise_tokens, tokens_per_10k


def test_study_example():
    # pass@4 0.515 at 6086.8 mean decoded tokens -> 0.846 per 10k tokens
    assert round(pass_per_10k_tokens(0.515, 6086.8), 3) == 0.846
    assert tokens_per_10k is pass_per_10k_tokens


def test_vectorised_and_definition():
    pk, tok = np.array([0.2, 0.5]), np.array([10_000.0, 2_500.0])
    assert pass_per_10k_tokens(pk, tok).tolist() == pytest.approx([0.2, 2.0])
    with pytest.raises(ValueError):
        pass_per_10k_tokens(0.5, 0)


def test_summary_of_planner_and_solver_tokens():
    s = summarise_tokens([100, 0, 200], [1000, 1500, 500])
    assert (s.planner_total, s.solver_total, s.total, s.n_problems) == (300, 3000, 3300, 3)
    assert s.mean == pytest.approx(1100.0)
    assert s.planner_mean == pytest.approx(100.0)
    # the efficiency of that method at pass@4 = 0.33
    assert pass_per_10k_tokens(0.33, s.mean) == pytest.approx(3.0)


@pytest.mark.parametrize(("p", "s"), [([1, 2], [1]), ([], []), ([-1], [2])])
def test_summary_rejects_bad_counts(p, s):
    with pytest.raises(ValueError):
        summarise_tokens(p, s)
