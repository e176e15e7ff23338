"""ROC curve and AUC for a binary score, in numpy only: the report's gate figure and the
trainers' gate acceptance rule share them (trainers import the harness, never the reverse)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def binary_arrays(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, labels) as float64 / int arrays, checked: 1-D, same length, labels 0 or 1,
    both classes present."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(int)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError("scores and labels must be 1-D and the same length")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    if y.sum() == 0 or y.sum() == y.size:
        raise ValueError("held-out labels need both valid (1) and invalid (0) plans")
    return s, y


def roc_auc(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """Mann-Whitney AUC: P(score_pos > score_neg) + 0.5 P(tie), from average ranks."""
    s, y = binary_arrays(scores, labels)
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse]  # 1-based, ties averaged
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def roc_points(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) at every distinct threshold, highest first, from (0, 0) to (1, 1)."""
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], labels[order]
    last = np.r_[np.nonzero(np.diff(s))[0], s.size - 1]  # last index of each distinct score
    tps, fps = np.cumsum(y)[last], np.cumsum(1 - y)[last]
    return np.r_[0.0, fps / max(fps[-1], 1)], np.r_[0.0, tps / max(tps[-1], 1)]
