"""One per-problem outcome row (`OutcomeRow`, the CSV columns) and the K-tuples whose
diversity is measured: the record shape the store's frames produce and the metrics consume."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

# how pass@k < K is scored: "unbiased" 1 - C(n-c,k)/C(n,k) for exchangeable samples (as
# lm-eval, LiveCodeBench and evalplus), "first" the first-K rule on an ordered rollout
ESTIMATORS: tuple[str, ...] = ("unbiased", "first")
# what the statistics take: "auto" scores each row with its own (its method's) estimator
ESTIMATOR_CHOICES: tuple[str, ...] = ("auto", *ESTIMATORS)
# which branches of the last K-tuple the first-K rule counts (cppo_bench.metrics.passk)
SELECTS: tuple[str, ...] = ("first", "last", "random")

CSV_COLUMNS = (
    "benchmark", "method", "seed", "problem_id", "outcomes", "passed",
    "planner_tokens", "solver_tokens", "trained",
)  # fmt: skip


@dataclass(frozen=True)
class OutcomeRow:
    benchmark: str
    method: str
    seed: int
    problem_id: str
    outcomes: tuple[bool, ...] | None = None  # per-branch, rollout order
    passed: bool | None = None  # pre-computed pass@K when per-branch results are absent
    planner_tokens: int | None = None
    solver_tokens: int | None = None
    select: str = "first"  # how the method's run picks K of a 4-tuple
    # pass@k < K for this row (cppo_bench.methods.passk_rule): unbiased | first
    estimator: str = "unbiased"
    answers: tuple[str | None, ...] = ()  # answer-prediction tasks: scored by maj@K
    label: str | None = None
    texts: tuple[tuple[str, ...], ...] = ()  # K-tuples for diversity: plans, else programs
    texts_kind: str = "plan"  # "plan" | "code": what `texts` holds (the judge prompt differs)
    # a trained checkpoint's tag (the manifest's `trained`, or the CSV column): its ± is the
    # std over training seeds; an untagged method is inference-only (bootstrap SE)
    trained: str | None = None
    dataset_size: int = 0  # the benchmark's full evaluation set (the run's dataset); 0: unknown
    # the record's tuple validity / fallbacks (cppo_bench.plan.validity.Tally); runs only
    validity: Any = field(default=None, compare=False, repr=False)


def tuple_texts(record: object) -> tuple[tuple[str, ...], ...]:
    """The K-tuples whose diversity is measured: plans, or programs for plan-less methods."""
    plans = getattr(record, "plans", None)
    if plans:
        return tuple(tuple(p) for p in plans)
    grouped: dict[int, list[str]] = defaultdict(list)
    for b in record.branches:  # type: ignore[attr-defined]
        grouped[b.tuple_index].append(b.code or b.completion)
    return tuple(tuple(grouped[i]) for i in sorted(grouped))


_tuples_of = tuple_texts  # the earlier private name, still imported by cppo_bench.report
