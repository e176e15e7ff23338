"""maj@K for answer-prediction tasks (LiveCodeBench code execution, test output prediction):
the most frequent normalised answer among K samples, scored against the label."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cppo_bench.util.answers import normalise_answer  # noqa: F401  (one normalisation: the method's votes and the metric's)


def majority_answer(
    answers: Sequence[str | None],
    k: int | None = None,
    normalise: Callable[[str | None], str | None] = normalise_answer,
) -> str | None:
    """The most frequent normalised answer among the first `k` samples (all when None).

    Ties go to the answer seen first in sample order; None when every sample abstained.
    """
    pool = answers if k is None else answers[:k]
    counts: dict[str, int] = {}  # insertion order == first-seen order
    for raw in pool:
        norm = normalise(raw)
        if norm is not None:
            counts[norm] = counts.get(norm, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    # study Eq. (maj@K): argmax of answer frequency, ties broken by first occurrence
    return next(a for a, n in counts.items() if n == best)


def maj_at_k(
    answers: Sequence[str | None],
    label: str,
    k: int | None = None,
    normalise: Callable[[str | None], str | None] = normalise_answer,
) -> bool:
    """True when the majority answer of the first `k` samples equals the normalised label."""
    if k is not None and len(answers) < k:
        raise ValueError(f"maj@{k} needs {k} samples, got {len(answers)}")
    voted = majority_answer(answers, k, normalise)
    return voted is not None and voted == normalise(label)


def maj_at_k_many(
    answers: Sequence[Sequence[str | None]],
    labels: Sequence[str],
    k: int | None = None,
    normalise: Callable[[str | None], str | None] = normalise_answer,
) -> np.ndarray:
    """Per-problem maj@k (0/1 floats) for many problems."""
    if len(answers) != len(labels):
        raise ValueError(f"{len(answers)} answer lists but {len(labels)} labels")
    return np.array(
        [float(maj_at_k(a, lab, k, normalise)) for a, lab in zip(answers, labels, strict=True)],
        dtype=np.float64,
    )
