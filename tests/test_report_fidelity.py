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
