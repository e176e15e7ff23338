"""Acceptance metrics for the plan-validity gate and the study's pre-registered rule.

A gate checkpoint is only usable when, on held-out labels, AUC >= 0.75, balanced accuracy >= 0.70
and precision and recall at the threshold tau are both >= 0.65 (fixed before any CPPO run, so
the gate cannot be tuned on the outcome it is meant to shape).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import Tensor

from trainers.harness import binary_arrays
from trainers.harness import roc_auc as metrics_roc_auc


@dataclass(frozen=True)
class AcceptanceRule:
    min_auc: float = 0.75
    min_balanced_accuracy: float = 0.70
    min_precision: float = 0.65
    min_recall: float = 0.65


PREREGISTERED_RULE = AcceptanceRule()


@dataclass(frozen=True)
class GateMetrics:
    auc: float
    balanced_accuracy: float
    precision: float
    recall: float
    tau: float
    n_pos: int
    n_neg: int

    def failures(self, rule: AcceptanceRule = PREREGISTERED_RULE) -> list[str]:
        checks = [
            ("AUC", self.auc, rule.min_auc),
            ("balanced accuracy", self.balanced_accuracy, rule.min_balanced_accuracy),
            ("precision", self.precision, rule.min_precision),
            ("recall", self.recall, rule.min_recall),
        ]
        return [
            f"{name} {value:.3f} < {floor:.2f}" for name, value, floor in checks if value < floor
        ]

    def passes(self, rule: AcceptanceRule = PREREGISTERED_RULE) -> bool:
        return not self.failures(rule)

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def _arrays(
    scores: Tensor | Sequence[float], labels: Tensor | Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(torch.as_tensor(scores, dtype=torch.float64))
    return binary_arrays(s, np.asarray(torch.as_tensor(labels)))


def roc_auc(scores: Tensor | Sequence[float], labels: Tensor | Sequence[int]) -> float:
    # Mann-Whitney Eq. AUC; the formula lives in the harness, which the report shares
    return metrics_roc_auc(*_arrays(scores, labels))


def gate_metrics(
    scores: Tensor | Sequence[float], labels: Tensor | Sequence[int], tau: float
) -> GateMetrics:
    # Eq. gate-metrics: J = 1{p >= tau}; balanced acc = (TPR + TNR) / 2; precision/recall of J
    s, y = _arrays(scores, labels)
    pred = s >= tau
    tp = int((pred & (y == 1)).sum())
    fp = int((pred & (y == 0)).sum())
    tn = int((~pred & (y == 0)).sum())
    fn = int((~pred & (y == 1)).sum())
    recall = tp / (tp + fn)
    tnr = tn / (tn + fp)
    return GateMetrics(
        auc=metrics_roc_auc(s, y),  # (s, y: checked arrays already)
        balanced_accuracy=(recall + tnr) / 2,
        precision=tp / (tp + fp) if tp + fp else 0.0,
        recall=recall,
        tau=float(tau),
        n_pos=tp + fn,
        n_neg=tn + fp,
    )


def choose_tau(
    scores: Tensor | Sequence[float], labels: Tensor | Sequence[int], min_recall: float = 0.9
) -> float:
    """Largest threshold keeping validation recall >= min_recall (the gate should rarely veto a
    valid plan: a false veto zeroes a good plan's reward, a false accept only adds noise)."""
    s, y = _arrays(scores, labels)
    pos = np.sort(s[y == 1])[::-1]
    need = int(np.ceil(min_recall * pos.size))
    return float(pos[max(need, 1) - 1])


def balance_weights(prompt_ids: Sequence[str], labels: Sequence[int]) -> Tensor:
    """Per-example loss weights: every (prompt, label) cell gets the same total weight within its
    label, and both labels the same overall, so neither prolific prompts nor the majority label
    dominate the BCE. Weights average to 1."""
    if len(prompt_ids) != len(labels) or not labels:
        raise ValueError("prompt_ids and labels must be non-empty and the same length")
    cells = Counter(zip(prompt_ids, labels, strict=True))
    cells_per_label = Counter(label for _, label in cells)
    w = [
        1.0 / (cells[(p, y)] * cells_per_label[y] * len(cells_per_label))
        for p, y in zip(prompt_ids, labels, strict=True)
    ]
    t = torch.tensor(w, dtype=torch.float32)
    return t * (len(w) / t.sum())
