"""Judge reliability: kappa, accuracy, macro-F1 (hand-checked and against scikit-learn), and
the acceptance rule."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from cppo_bench.diversity import accuracy, cohen_kappa, consensus, judge_reliability, macro_f1


def test_kappa_by_hand():
    # 10 items; agreement 7/10; A: 5 DP 5 greedy; B: 4 DP 6 greedy
    a = ["DP"] * 5 + ["greedy"] * 5
    b = ["DP"] * 3 + ["greedy"] * 2 + ["DP"] * 1 + ["greedy"] * 4
    p_o, p_e = 0.7, 0.5 * 0.4 + 0.5 * 0.6
    assert cohen_kappa(a, b) == pytest.approx((p_o - p_e) / (1 - p_e))  # = 0.4
    assert cohen_kappa(a, a) == 1.0
    assert math.isnan(cohen_kappa(["DP"] * 3, ["DP"] * 3))  # chance agreement is 1: undefined


def test_macro_f1_by_hand():
    gold = ["DP", "DP", "greedy", "graph"]
    pred = ["DP", "greedy", "greedy", "DP"]
    # DP: tp1 fp1 fn1 -> 0.5; greedy: tp1 fp1 fn0 -> 2/3; graph: tp0 -> 0
    assert macro_f1(pred, gold) == pytest.approx((0.5 + 2 / 3 + 0) / 3)
    assert accuracy(pred, gold) == 0.5


labels = st.sampled_from(["DP", "greedy", "graph", "math"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(labels, labels), min_size=1, max_size=30))
def test_against_scikit_learn(pairs):
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    assert accuracy(a, b) == pytest.approx(accuracy_score(b, a))
    assert macro_f1(a, b) == pytest.approx(f1_score(b, a, average="macro", zero_division=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns where kappa is undefined (NaN)
        expected = cohen_kappa_score(a, b)
    got = cohen_kappa(a, b)
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


def test_acceptance_rule():
    ann_a = ["DP", "greedy", "graph", "DP", "math", "greedy", "graph", "DP", "math", "greedy"]
    ann_b = ["DP", "greedy", "graph", "DP", "math", "greedy", "graph", "DP", "math", "DP"]
    assert consensus(ann_a, ann_b) == list(range(9))
    good = judge_reliability(ann_a, ann_a, ann_b)
    assert good.accepted and good.accuracy == 1.0 and good.n_consensus == 9
    assert good.kappa == pytest.approx(cohen_kappa(ann_a, ann_b)) and good.kappa >= 0.6
    bad_judge = ["DP"] * 10
    bad = judge_reliability(bad_judge, ann_a, ann_b)
    assert not bad.accepted and bad.macro_f1 < 0.7
    # a judge that is good enough, but annotators who disagree too much
    noisy_b = ["greedy", "DP", "graph", "math", "DP", "greedy", "DP", "graph", "math", "greedy"]
    rel = judge_reliability(ann_a, ann_a, noisy_b)
    assert rel.macro_f1 == 1.0 and rel.kappa < 0.6 and not rel.accepted


def test_mismatched_lengths():
    with pytest.raises(ValueError):
        cohen_kappa(["DP"], ["DP", "DP"])
    with pytest.raises(ValueError):
        judge_reliability(["DP"], ["DP", "DP"], ["DP", "DP"])
