"""CPPO stage 2: the generative verifier, the acceptance rule and the between-phase refresh."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from tests.helpers.cppo_tiny import METHODS, problems, tiny_llama, word_tokenizer
from trainers.core.gate_metrics import AcceptanceRule
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.negatives import (
    LabelledTuple,
    balance,
    make_negatives,
    split_by_problem,
)
from trainers.cppo_pipeline.refresh import refresh


def _data(shift: int = 0, rotations: int = 1) -> list[LabelledTuple]:
    pos = []
    for p in problems():
        ms = METHODS[p.problem_id]
        for r in range(shift, shift + rotations):
            pos.append(LabelledTuple(p, tuple(ms[r % 4 :] + ms[: r % 4]), 1, "judge:rules"))
    return balance(pos + make_negatives(pos, seed=shift), seed=shift)


def _generative(cfg: rmod.RMConfig) -> rmod.GenerativeVerifier:
    texts = [f"{t.problem.statement} {t.text}" for t in _data()] + [
        rmod._QUESTION,
        "Problem: Methods:",
    ]
    tok = word_tokenizer(texts)
    return rmod.GenerativeVerifier(tiny_llama(len(tok)), tok, cfg)


def test_generative_verifier_reads_the_two_answer_words() -> None:
    rm = _generative(rmod.RMConfig())
    items = _data()[:3]
    p = rmod.probabilities(rm, items)
    enc = rm.tokenizer.encode(rm.prompt(items[0]), add_special_tokens=False)
    with torch.no_grad():
        last = rm.module(input_ids=torch.tensor([enc])).logits[0, -1]
    two = torch.softmax(last[[rm.yes_id, rm.no_id]], dim=0)
    assert float(p[0]) == pytest.approx(float(two[0]), abs=1e-5)  # padding does not leak in
    assert rm.tokenizer.decode([rm.yes_id]) == "Yes"


def test_generative_verifier_learns_with_bce() -> None:
    cfg = rmod.RMConfig(epochs=20, lr=3e-3, batch_size=4, tau=None, min_recall=0.8)
    rm = _generative(cfg)
    data = _data()
    history = rmod.fit(rm, data, cfg)
    assert history[-1] < history[0] * 0.5
    metrics, scores = rmod.evaluate(rm, data, cfg)
    assert metrics.auc > 0.9 and len(scores) == len(data)


# The refresh test is about the mechanics (resume, rebalance, re-check), not about how well a
# hashed n-gram model transfers to unseen toy problems: it accepts under a permissive rule and
# shows the re-check by refusing under an impossible one.
PERMISSIVE = AcceptanceRule(0.0, 0.0, 0.0, 0.0)


def _accepted_ngram(folder: Path) -> tuple[rmod.RMConfig, list[LabelledTuple]]:
    cfg = rmod.RMConfig(kind="ngram", epochs=40, lr=1e-2, tau=None, min_recall=0.75)
    rm = rmod.RM_KINDS.get("ngram").create(cfg)
    pool = _data(rotations=4)
    train, val = split_by_problem(pool, 0.25)
    rmod.fit(rm, train, cfg)
    metrics, _ = rmod.evaluate(rm, val, cfg)
    rmod.accept(metrics, PERMISSIVE)
    rmod.save(rm, folder, metrics, cfg)
    return cfg, pool


def test_rm_failing_the_rule_is_refused_naming_the_metric(tmp_path: Path) -> None:
    cfg = rmod.RMConfig(kind="ngram", epochs=40, lr=1e-2, tau=0.999)  # vetoes everything
    rm = rmod.RM_KINDS.get("ngram").create(cfg)
    train, val = split_by_problem(_data(), 0.25)
    rmod.fit(rm, train, cfg)
    metrics, _ = rmod.evaluate(rm, val, cfg)
    with pytest.raises(rmod.RMRejected, match=r"recall 0\.000 < 0\.65") as err:
        rmod.accept(metrics)
    assert any(f.startswith("recall") for f in err.value.failed)
    # a saved model whose recorded metrics fail is refused on load as well
    rm_dir = tmp_path / "rm"
    rmod.save(rm, rm_dir, metrics, cfg)
    with pytest.raises(rmod.RMRejected, match="recall"):
        rmod.load(rm_dir)


def test_refresh_changes_the_rm_and_rechecks_it(tmp_path: Path) -> None:
    cfg, pool = _accepted_ngram(tmp_path / "rm0")
    fresh = [t for t in _data(shift=1, rotations=2) if t.label == 1]
    result, merged = refresh(tmp_path / "rm0", tmp_path / "rm1", pool, fresh, cfg, PERMISSIVE)
    assert result.weight_change > 0 and result.new_labels == len(fresh)
    assert len(merged) > len(pool)
    assert set(result.metrics) >= {"auc", "balanced_accuracy", "precision", "recall"}
    _, tau = rmod.load(tmp_path / "rm1", PERMISSIVE)
    assert tau == result.tau
    strict = dataclasses.replace(AcceptanceRule(), min_auc=1.01)
    with pytest.raises(rmod.RMRejected, match="AUC") as err:
        refresh(tmp_path / "rm1", tmp_path / "rm2", merged, fresh, cfg, rule=strict)
    assert err.value.failed[0].startswith("AUC")  # the refreshed model's own held-out check
    assert not (tmp_path / "rm2").exists()  # a refused refresh writes nothing
