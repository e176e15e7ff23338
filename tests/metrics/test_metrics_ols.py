"""OLS fit and its confidence band, against scipy.linregress and the matrix formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cppo_bench.metrics import ols_fit


def test_fit_matches_linregress_and_matrix_band():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 0.9, size=12)
    y = 0.05 + 0.3 * x + rng.normal(0, 0.03, size=12)
    fit = ols_fit(x, y, grid=[0.1, 0.5, 1.0])
    ref = stats.linregress(x, y)
    assert fit.slope == pytest.approx(ref.slope)
    assert fit.intercept == pytest.approx(ref.intercept)
    assert fit.r == pytest.approx(ref.rvalue)
    assert fit.p == pytest.approx(ref.pvalue)
    assert fit.slope_stderr == pytest.approx(ref.stderr)
    # band: t * sqrt(s^2 * x0' (X'X)^-1 x0), the textbook matrix form
    design = np.column_stack([np.ones_like(x), x])
    s2 = np.sum((y - design @ [fit.intercept, fit.slope]) ** 2) / (len(x) - 2)
    cov = s2 * np.linalg.inv(design.T @ design)
    t = stats.t.ppf(0.975, len(x) - 2)
    for g, lo, hi in zip(fit.grid, fit.band_low, fit.band_high, strict=True):
        x0 = np.array([1.0, g])
        half = t * np.sqrt(x0 @ cov @ x0)
        assert lo == pytest.approx(fit.predict(g) - half)
        assert hi == pytest.approx(fit.predict(g) + half)


def test_band_is_narrowest_at_the_mean_and_default_grid():
    x = np.arange(10, dtype=float)
    y = 2 * x + np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.0, 0.2, -0.3, 0.1, -0.05])
    fit = ols_fit(x, y, n_grid=19)
    width = fit.band_high - fit.band_low
    assert fit.grid[0] == 0 and fit.grid[-1] == 9 and len(fit.grid) == 19
    assert np.argmin(width) == 9  # grid point 4.5 == mean of x
    assert fit.p < 1e-6


def test_rejects_degenerate_input():
    with pytest.raises(ValueError):
        ols_fit([1, 2], [1, 2])
    with pytest.raises(ValueError):
        ols_fit([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError):
        ols_fit([1, 2, 3], [1, 2])
