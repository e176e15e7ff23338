"""Issue #15: the report's metrics, tables and figures follow the study's definitions."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cppo_bench.report.measures import METRICS


def _ctx(records):
    return SimpleNamespace(records=records, notes=[])


def test_dup_rate_counts_duplicate_plan_tuples_once():
    two_repeats = {"k": 4, "count": 4, "n_duplicates": 2, "duplicates": [[0, 1], [0, 2]]}
    clean = {"k": 4, "count": 4, "n_duplicates": 0, "duplicates": []}
    legacy = {"k": 4, "duplicates": [[1, 3]]}  # older report without n_duplicates
    recs = [
        SimpleNamespace(plan_validity=[two_repeats, clean]),
        SimpleNamespace(plan_validity=[legacy]),
        SimpleNamespace(plan_validity=[]),
    ]
    values = METRICS.get("dup_rate").problem(_ctx(recs))
    # a tuple with any repeated method counts once: 1 of 2 tuples, 1 of 1; the share of
    # repeated plans (the earlier rule) would give 2/8 and 1/4
    assert values[:2] == pytest.approx([0.5, 1.0]) and np.isnan(values[2])


def test_inference_only_spread_is_the_bootstrap_standard_error():
    from cppo_bench.metrics import mean_std

    outcomes = np.array([1.0] * 103 + [0.0] * 97)  # pass@4 0.515 on 200 problems
    ms = mean_std(outcomes, trained=False)
    assert ms.mean == pytest.approx(0.515) and ms.kind == "bootstrap_se"
    # the standard error of a mean of 200 0/1 outcomes, not their std (0.50)
    assert ms.std == pytest.approx(np.sqrt(0.515 * 0.485 / 200), abs=0.004)
    assert mean_std(outcomes, trained=False, inference_spread="std").std == pytest.approx(
        outcomes.std(ddof=1)
    )
    assert mean_std(outcomes, trained=False).std == ms.std  # seeded: reproducible
