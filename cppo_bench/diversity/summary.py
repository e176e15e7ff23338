"""Diversity of every run's K-tuples, averaged per (benchmark, method, seed): what
`cppo-bench stats diversity` prints and the diversity-vs-gain figure reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from cppo_bench.metrics.table import OutcomeRow


@dataclass
class RunDiversity:
    benchmark: str
    method: str
    seed: int
    tuples: int  # tuples with at least 2 members (the others have no pairwise diversity)
    kind: str  # "plan" | "code" | "mixed"
    d_surf: float | None = None
    d_sem: float | None = None
    d_alg: float | None = None
    unparseable: int = 0  # judge replies that named no category
    judged: int = 0


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def summarise_diversity(
    rows: Sequence[OutcomeRow],
    measures: Collection[str],
    *,
    encoder: object | None = None,
    judge: object | None = None,
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> list[RunDiversity]:
    """Mean D_surf / D_sem / D_alg per (benchmark, method, seed) over the rows' tuples.

    `encoder` (an Encoder, needed for "sem") encodes all texts in one batched pass; `judge`
    (a Backend, needed for "alg") labels all plans in one call and all programs in another;
    `progress` is called with the number of judge replies just finished.
    """
    from cppo_bench.diversity.algorithmic import algorithmic_diversity, label_tuples
    from cppo_bench.diversity.semantic import semantic_diversity_many
    from cppo_bench.diversity.surface import surface_diversity

    if "sem" in measures and encoder is None:
        raise ValueError("D_sem needs an encoder")
    if "alg" in measures and judge is None:
        raise ValueError("D_alg needs a judge backend")
    items: list[tuple[tuple[str, str, int], str, tuple[str, ...]]] = []
    for row in rows:
        for t in row.texts:
            if len(t) >= 2:
                items.append(((row.benchmark, row.method, row.seed), row.texts_kind, t))
    if not items:
        raise ValueError("no K-tuple with at least 2 members in these runs")
    surf = [surface_diversity(t) for _, _, t in items] if "surf" in measures else None
    sem = (
        semantic_diversity_many([t for _, _, t in items], encoder, batch_size)  # type: ignore[arg-type]
        if "sem" in measures
        else None
    )
    alg: list[float | None] = [None] * len(items)
    bad: list[int] = [0] * len(items)
    if "alg" in measures:
        for kind in ("plan", "code"):
            idx = [i for i, (_, k, _) in enumerate(items) if k == kind]
            if not idx:
                continue
            tuples = [items[i][2] for i in idx]
            labels = label_tuples(tuples, judge, kind, progress=progress)  # type: ignore[arg-type]
            for i, lab, miss in zip(idx, labels.labels, labels.misses, strict=True):
                alg[i] = algorithmic_diversity(lab)
                bad[i] = miss
    groups: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for i, (key, _, _) in enumerate(items):
        groups[key].append(i)
    out = []
    for (bench, method, seed), idx in sorted(groups.items()):
        kinds = {items[i][1] for i in idx}
        out.append(
            RunDiversity(
                benchmark=bench,
                method=method,
                seed=seed,
                tuples=len(idx),
                kind=kinds.pop() if len(kinds) == 1 else "mixed",
                d_surf=_mean([surf[i] for i in idx]) if surf is not None else None,
                d_sem=_mean([sem[i] for i in idx]) if sem is not None else None,
                d_alg=_mean([a for i in idx if (a := alg[i]) is not None])
                if "alg" in measures
                else None,
                unparseable=sum(bad[i] for i in idx),
                judged=sum(len(items[i][2]) for i in idx) if "alg" in measures else 0,
            )  # fmt: skip
        )
    return out
