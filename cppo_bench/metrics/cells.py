"""`stats passk` cells: per benchmark and method, the mean ± the study's uncertainty with
its coverage, the problems some seed lacks (named, not hidden), and what the method did
(tuple validity). The same `cell_uncertainty` as the report, so both print the same ±."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cppo_bench.metrics.table import OutcomeRow, Scores
from cppo_bench.metrics.uncertainty import Spread, Uncertainty, cell_uncertainty
from cppo_bench.plan.validity import Tally


@dataclass
class StatsCell:
    benchmark: str
    method: str
    k: int
    value: Uncertainty
    seeds: list[int]
    missing: dict[int, list[str]] = field(default_factory=dict)  # seed -> problems it lacks
    tally: Tally = field(default_factory=Tally)
    estimator: str = ""  # how pass@k was scored (metrics.table.estimator_name)

    def missing_text(self) -> str:
        """'seed 1 lacks 2 problems (p3, p4): the 30 problems all seeds share are used'."""
        if not self.missing:
            return ""
        parts = []
        for seed, pids in sorted(self.missing.items()):
            shown = ", ".join(pids[:5]) + (f", ... {len(pids) - 5} more" if len(pids) > 5 else "")
            parts.append(f"seed {seed} lacks {len(pids)} problem(s) ({shown})")
        return (
            f"{self.benchmark}/{self.method}: "
            + "; ".join(parts)
            + f": the {self.value.n_problems} problems all seeds share are used"
        )

    def to_dict(self) -> dict[str, Any]:
        v = self.value
        return {
            "benchmark": self.benchmark,
            "method": self.method,
            "k": self.k,
            "estimator": self.estimator,
            "mean": v.mean,
            "spread": v.spread,
            "spread_kind": v.kind,
            "std": v.spread,  # the earlier key, same number
            "std_over": v.over,
            "seeds": len(self.seeds),
            "problems": v.n_problems,
            "problems_total": v.n_total or None,
            "partial": v.partial,
            "missing": {str(s): p for s, p in sorted(self.missing.items())},
            "validity": self.tally.to_dict(),
        }


def stats_cells(
    rows: Sequence[OutcomeRow],
    scores: Scores,
    k: int,
    spread: Spread = "study",
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[list[StatsCell], list[str]]:
    """One cell per benchmark and method of `scores` (group_scores of `rows`), and a
    warning for each benchmark/method left out (its seeds share no problem)."""
    trained: dict[tuple[str, str], bool] = {}
    totals: dict[tuple[str, str], int] = {}
    tallies: dict[tuple[str, str], Tally] = {}
    for r in rows:
        key = (r.benchmark, r.method)
        trained[key] = trained.get(key, False) or bool(r.trained)
        totals[key] = max(totals.get(key, 0), r.dataset_size)
        if r.validity is not None:
            tallies.setdefault(key, Tally()).add(r.validity)
    cells, warnings = [], []
    for bench, methods in sorted(scores.items()):
        for method, per_seed in sorted(methods.items()):
            seeds = sorted(per_seed)
            union = set().union(*(per_seed[s] for s in seeds))
            shared = sorted(set.intersection(*(set(per_seed[s]) for s in seeds)))
            missing = {s: sorted(union - set(per_seed[s])) for s in seeds}
            missing = {s: p for s, p in missing.items() if p}
            if not shared:
                warnings.append(f"{bench}/{method}: left out, its seeds {seeds} share no problem")
                continue
            mat = np.array([[per_seed[s][p] for p in shared] for s in seeds])
            value = cell_uncertainty(
                mat,
                trained.get((bench, method), False),
                spread,
                resamples=resamples,
                seed=seed,
                n_total=totals.get((bench, method), 0),
            )
            tally = tallies.get((bench, method), Tally())
            cells.append(StatsCell(bench, method, k, value, seeds, missing, tally))
    return cells, warnings
