"""A run's summary (summary.json): pass@K, maj@K, tokens and the plan validity tally of its
records; written by the run pipeline and again by `runs merge`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cppo_bench.store.runs import ProblemRecord


def summarize(records: Sequence[ProblemRecord], k: int) -> dict[str, Any]:
    """pass@K (any branch passes), maj@K where the task has one, token totals, and the
    tuple validity / fallback counts (cppo_bench.plan.validity) that say what the method did."""
    from cppo_bench.plan.validity import run_tally

    n = len(records)
    maj = [r.extra["maj_at_k"] for r in records if "maj_at_k" in r.extra]
    return {
        "problems": n,
        "k": k,
        "pass_at_k": sum(r.passed for r in records) / n if n else None,
        "maj_at_k": sum(maj) / len(maj) if maj else None,
        "planner_tokens": sum(r.planner_tokens for r in records),
        "solver_tokens": sum(r.solver_tokens for r in records),
        "validity": run_tally(records).to_dict(),
    }
