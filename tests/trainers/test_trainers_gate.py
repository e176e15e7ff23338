"""Plan-validity gate: metrics, balancing, CPU training of the n-gram reward model on a
synthetic set through the one gate stack (trainers.cppo_pipeline.reward_model), refusal rule."""

from __future__ import annotations

import random
from itertools import product
from pathlib import Path

import pytest
import torch

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.problem import Test as ProblemTest
from trainers.core.gate_metrics import (
    PREREGISTERED_RULE,
    GateMetrics,
    balance_weights,
    choose_tau,
    gate_metrics,
    roc_auc,
)
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.negatives import LabelledTuple

FAMILIES = {
    "graph": (
        "given a graph with n nodes and m edges",
        ["bfs", "dfs", "dijkstra", "union find", "topological sort", "floyd warshall"],
    ),
    "array": (
        "given an array of n integers",
        ["prefix sums", "two pointers", "sliding window", "binary search", "monotonic stack"],
    ),
    "string": (
        "given a string s of lowercase letters",
        ["hashing", "kmp", "trie", "suffix array", "z function", "manacher"],
    ),
    "math": (
        "given integers a b and a prime modulus",
        ["sieve", "gcd", "fast power", "combinatorics", "matrix power", "inclusion exclusion"],
    ),
}
TASKS = ["count the answers", "find the minimum cost", "print yes or no", "report the maximum"]


def synthetic(n_prompts: int, seed: int, noise: float = 0.1) -> list[LabelledTuple]:
    """Valid: four distinct strategies of the problem's family. Invalid: strategies of another
    family, or a tuple with no strategy at all. Prompts contribute unequal numbers of examples,
    and a share ``noise`` of the labels is flipped (annotators disagree)."""
    rng = random.Random(seed)
    out = []
    for i in range(n_prompts):
        fam = rng.choice(sorted(FAMILIES))
        intro, strategies = FAMILIES[fam]
        problem = f"{intro} {rng.choice(TASKS)} case {rng.randrange(10**6)}"
        prob = Problem("synthetic", f"p{seed}-{i}", problem, (ProblemTest("", ""),))
        for _ in range(rng.randint(1, 4)):
            out.append(LabelledTuple(prob, tuple(rng.sample(strategies, 4)), 1, "synthetic"))
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.8:
                other = FAMILIES[rng.choice(sorted(set(FAMILIES) - {fam}))][1]
                plans = tuple(rng.sample(other, 4))
            else:
                plans = ("just write the code", "try again", "think", "done")
            out.append(LabelledTuple(prob, plans, 0, "synthetic"))
    return [
        LabelledTuple(e.problem, e.plans, 1 - e.label, e.source) if rng.random() < noise else e
        for e in out
    ]


def test_auc_matches_pairwise_definition_with_ties() -> None:
    rng = random.Random(0)
    scores = [rng.choice([0.1, 0.2, 0.5, 0.9]) for _ in range(40)]
    labels = [rng.randint(0, 1) for _ in range(40)]
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    pairs = [(p > n) + 0.5 * (p == n) for p, n in product(pos, neg)]
    assert roc_auc(scores, labels) == pytest.approx(sum(pairs) / len(pairs))


def test_threshold_metrics_and_rule() -> None:
    scores = [0.9, 0.8, 0.3, 0.1, 0.6, 0.2, 0.05, 0.01]
    labels = [1, 1, 1, 0, 0, 0, 0, 1]
    m = gate_metrics(scores, labels, tau=0.25)
    # predicted positive: .9 .8 .3 .6 -> TP 3, FP 1; negatives .1 .2 .05 .01 -> TN 3, FN 1
    assert (m.precision, m.recall) == (0.75, 0.75)
    assert m.balanced_accuracy == pytest.approx((0.75 + 0.75) / 2)
    assert m.auc == pytest.approx(11 / 16)  # positive .01 ranks below every negative
    assert m.failures() == ["AUC 0.688 < 0.75"] and not m.passes()
    weak = GateMetrics(
        auc=0.74, balanced_accuracy=0.7, precision=0.9, recall=0.64, tau=0.17, n_pos=5, n_neg=5
    )
    assert weak.failures(PREREGISTERED_RULE) == ["AUC 0.740 < 0.75", "recall 0.640 < 0.65"]
    tau = choose_tau(scores, labels, min_recall=0.75)
    assert gate_metrics(scores, labels, tau).recall >= 0.75 and tau == 0.3
    with pytest.raises(ValueError, match="both"):
        roc_auc([0.1, 0.2], [1, 1])


def test_balance_weights_equalise_prompts_and_labels() -> None:
    prompts = ["a", "a", "a", "a", "b", "b", "c"]
    labels = [1, 1, 1, 0, 1, 0, 0]
    w = balance_weights(prompts, labels)
    assert float(w.mean()) == pytest.approx(1.0)
    by: dict[tuple[str, int], float] = {}
    for p, y, wi in zip(prompts, labels, w.tolist(), strict=True):
        by[(p, y)] = by.get((p, y), 0.0) + wi
    assert by[("a", 1)] == pytest.approx(by[("b", 1)])  # 3 vs 1 examples, same total weight
    assert by[("a", 0)] == pytest.approx(by[("b", 0)]) == pytest.approx(by[("c", 0)])
    pos = sum(v for (_, y), v in by.items() if y == 1)
    assert pos == pytest.approx(sum(v for (_, y), v in by.items() if y == 0))


CFG = rmod.RMConfig(kind="ngram", epochs=15, batch_size=64, lr=1e-2)


@pytest.fixture(scope="module")
def trained():
    train, held_out = synthetic(160, seed=1), synthetic(60, seed=2)
    rm = rmod.RM_KINDS.get("ngram").create(CFG)
    rmod.fit(rm, train, CFG)
    return rm, held_out


def test_gate_trains_on_cpu_passes_the_rule_and_reloads(trained, tmp_path: Path) -> None:
    rm, held_out = trained
    # tau chosen on a validation split for high recall (tau: null), then checked held out
    chosen, _ = rmod.evaluate(rm, synthetic(40, 3), rmod.RMConfig(kind="ngram", tau=None))
    assert chosen.recall >= 0.9 and chosen.tau != 0.17
    cfg = rmod.RMConfig(kind="ngram", tau=chosen.tau)
    metrics, scores = rmod.evaluate(rm, held_out, cfg)
    assert metrics.auc > 0.85 and metrics.passes(), metrics.failures()
    j = rmod.gate_verdicts(rm, metrics.tau, held_out)
    assert set(j.unique().tolist()) == {0.0, 1.0}
    rmod.save(rm, tmp_path / "rm", metrics, cfg, held_out[:5])
    loaded, tau = rmod.load(tmp_path / "rm")
    assert tau == metrics.tau
    assert torch.equal(rmod.probabilities(loaded, held_out), scores)
    assert not list(tmp_path.glob("rm/*.pt"))  # safetensors only: loading unpickles nothing


def test_a_gate_failing_the_rule_is_refused(trained, tmp_path: Path) -> None:
    rng = random.Random(0)
    noisy = [
        LabelledTuple(e.problem, e.plans, rng.randint(0, 1), e.source) for e in synthetic(80, 4)
    ]
    cfg = rmod.RMConfig(kind="ngram", epochs=5, batch_size=64, lr=1e-2)
    rm = rmod.RM_KINDS.get("ngram").create(cfg)
    rmod.fit(rm, noisy, cfg)
    held_out = [
        LabelledTuple(e.problem, e.plans, rng.randint(0, 1), e.source) for e in synthetic(60, 5)
    ]
    metrics, _ = rmod.evaluate(rm, held_out, cfg)
    assert not metrics.passes()
    with pytest.raises(rmod.RMRejected, match="reward model rejected"):
        rmod.accept(metrics)
    # a checkpoint written with failing metrics is still refused at load time
    rmod.save(rm, tmp_path / "bad", metrics, cfg)
    with pytest.raises(rmod.RMRejected, match="reward model rejected"):
        rmod.load(tmp_path / "bad")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "ngram.safetensors").write_text("not a checkpoint")
    with pytest.raises(DataError, match="junk"):
        rmod.load(tmp_path / "junk")
