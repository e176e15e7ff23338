"""The metrics a table cell can show, registered by name (a spec column's ``metric``).

Each turns one run's records into per-problem values (NaN: not applicable to that problem)
or one run-level value, by calling cppo_bench.metrics and cppo_bench.diversity; nothing
here re-derives a formula. A branch a record lacks (the planner emitted fewer strategies)
counts as a failed attempt, and a missing answer as an abstention.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cppo_bench.metrics import maj_at_k, pass_per_10k_tokens, summarise_tokens
from cppo_bench.metrics.table import OutcomeRow, row_scores, tuple_texts
from cppo_bench.report.run_index import RunRef
from cppo_bench.report.specs import MetricSpec, Selector
from cppo_bench.store.runs import ProblemRecord
from cppo_bench.util.registry import Registry


@dataclass
class Ctx:
    run: RunRef
    records: list[ProblemRecord]
    metric: MetricSpec
    row: Selector
    seed: int  # the report's seed (random first-K selection)
    encoder: Any = None  # sentence encoder for D_sem (None: not computed)
    judge: Any = None  # strategy-judge backend for D_alg (None: not computed)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MetricDef:
    label: str  # column header; "{k}" is replaced by the metric's K
    digits: int = 3
    problem: Callable[[Ctx], np.ndarray] | None = None  # per-problem values, NaN = n/a
    run: Callable[[Ctx], float | None] | None = None  # one value per run (ratios)
    derivable: bool = False  # may be read off a run with more attempts than K
    na_note: str = "not applicable to these runs"


METRICS: Registry[MetricDef] = Registry("report metric")


def _padded(rec: ProblemRecord, width: int) -> tuple[bool, ...]:
    out = tuple(rec.outcomes)
    return out + (False,) * max(0, width - len(out))


def _pass(ctx: Ctx) -> np.ndarray:
    """pass@k of each record by `row_scores`, the function `stats passk` calls. A record's
    missing branches (fewer plans than K) are failed attempts, but only up to the run's own
    K: a selection the run has no branches for (last-K / random-K of a 4-tuple from a K < 4
    run) is an empty cell with the reason, never another selection's number."""
    from cppo_bench.metrics.passk import branches_needed

    k, run_k = ctx.metric.k, ctx.run.manifest.k
    if not ctx.records:
        return np.empty(0)
    estimator = ctx.metric.estimator or ctx.row.estimator
    select = ctx.row.select
    if run_k == k and select == "first":  # exactly K attempts: solved iff any passed
        estimator = "first"
    # "auto" scores these rows by OutcomeRow's default, the unbiased estimator
    unbiased = estimator in ("unbiased", "auto")
    need = k if unbiased else branches_needed(k, select)  # type: ignore[arg-type]
    if run_k < need:
        ctx.notes.append(
            f"not computed: pass@{k} with select={select} reads {need} branches per problem "
            f"(whole 4-tuples); these runs have k={run_k}"
        )
        return np.full(len(ctx.records), np.nan)
    rows = [
        OutcomeRow(
            ctx.run.manifest.bench,
            ctx.run.manifest.method,
            ctx.run.seed,
            r.problem_id,
            outcomes=_padded(r, run_k),
        )
        for r in ctx.records
    ]
    return row_scores(rows, k, estimator=estimator, select=select, seed=ctx.seed)  # type: ignore[arg-type]


def _maj(ctx: Ctx) -> np.ndarray:
    # the run scores answers with the output-prediction normaliser; so does the report
    from cppo_bench.methods.output_prediction import canonical_answer

    k, out = ctx.metric.k, np.full(len(ctx.records), np.nan)
    for i, r in enumerate(ctx.records):
        if r.label is None:
            continue
        answers = [b.answer for b in r.branches][:k]
        answers += [None] * (k - len(answers))  # a missing attempt is an abstention
        out[i] = float(maj_at_k(answers, r.label, k, canonical_answer))
    if np.isnan(out).any() and not np.isnan(out).all():
        ctx.notes.append("maj@K needs labelled answer-prediction records; unlabelled ones skipped")
    return out


def _tokens(field_name: str | None) -> Callable[[Ctx], np.ndarray]:
    def values(ctx: Ctx) -> np.ndarray:
        if field_name is None:
            return np.array([r.planner_tokens + r.solver_tokens for r in ctx.records], float)
        return np.array([getattr(r, field_name) for r in ctx.records], dtype=np.float64)

    return values


def _pass_per_10k(ctx: Ctx) -> float | None:
    if not ctx.records:
        return None
    tokens = summarise_tokens(
        [r.planner_tokens for r in ctx.records], [r.solver_tokens for r in ctx.records]
    )
    if tokens.mean <= 0:
        ctx.notes.append("the runs record no decoded-token counts")
        return None
    return float(pass_per_10k_tokens(float(np.mean(_pass(ctx))), tokens.mean))


def _has_duplicate(report: dict[str, Any]) -> bool | None:
    """Whether one tuple's validity report (cppo_bench.plan.contract.ValidityReport.to_dict) finds
    a method repeating an earlier one of the tuple; None if the report does not say."""
    if "n_duplicates" in report:
        return int(report["n_duplicates"]) > 0
    if isinstance(report.get("duplicates"), list):
        return bool(report["duplicates"])
    return None


def _dup_rate(ctx: Ctx) -> np.ndarray:
    """Per problem: the share of its plan tuples that are duplicate-plan tuples, i.e. hold
    at least one method literally repeating another (the study counts tuples: a tuple with
    two repeats counts once, as does one with a single repeat)."""
    out = np.full(len(ctx.records), np.nan)
    for i, r in enumerate(ctx.records):
        flags = [
            f
            for f in (_has_duplicate(v) for v in r.plan_validity if isinstance(v, dict))
            if f is not None
        ]
        if flags:
            out[i] = sum(flags) / len(flags)
    return out


def _valid(ctx: Ctx) -> np.ndarray:
    """Per problem: the share of its plan tuples that are valid, by the one rule every count
    of validity uses (cppo_bench.plan.validity.record_tally); NaN for a plan-less record."""
    from cppo_bench.plan.validity import record_tally

    tallies = [record_tally(r) for r in ctx.records]
    return np.array([t.valid_share if t.tuples else np.nan for t in tallies], dtype=np.float64)


def _distinct(ctx: Ctx) -> np.ndarray:
    """Per problem: the mean over its K-tuples of the share of distinct programs among the
    tuple's attempts (the programs the verifier ran, surrounding whitespace aside; a missing
    attempt counts as no new program). Where each program is one strategy, as on the
    `strategies` task, this is D_alg with an exact labeller."""
    k = ctx.metric.k
    out = np.full(len(ctx.records), np.nan)
    for i, r in enumerate(ctx.records):
        grouped: dict[int, list[str]] = {}
        for b in r.branches:
            grouped.setdefault(b.tuple_index, []).append((b.code or b.completion).strip())
        shares = [len(set(t[:k])) / k for t in grouped.values() if t]
        if shares:
            out[i] = float(np.mean(shares))
    return out


def _per_tuple(ctx: Ctx, score: Callable[[list[list[str]]], list[float]]) -> np.ndarray:
    """Mean over a record's K-tuples (with >= 2 texts) of a tuple-level diversity score."""
    tuples, owner = [], []
    for i, r in enumerate(ctx.records):
        for t in tuple_texts(r):
            if len(t) >= 2:
                tuples.append(list(t))
                owner.append(i)
    out = np.full(len(ctx.records), np.nan)
    if not tuples:
        return out
    sums, counts = np.zeros(len(ctx.records)), np.zeros(len(ctx.records))
    np.add.at(sums, owner, score(tuples))
    np.add.at(counts, owner, 1)
    has = counts > 0
    out[has] = sums[has] / counts[has]
    return out


def _d_surf(ctx: Ctx) -> np.ndarray:
    from cppo_bench.diversity import surface_diversity

    return _per_tuple(ctx, lambda ts: [surface_diversity(t) for t in ts])


def _d_sem(ctx: Ctx) -> np.ndarray:
    encoder = ctx.encoder
    if encoder is None:
        ctx.notes.append("D_sem not computed: no sentence encoder (pass --encoder NAME|DIR)")
        return np.full(len(ctx.records), np.nan)
    from cppo_bench.diversity import semantic_diversity_many

    return _per_tuple(ctx, lambda ts: semantic_diversity_many(ts, encoder))


def _d_alg(ctx: Ctx) -> np.ndarray:
    judge = ctx.judge
    if judge is None:
        ctx.notes.append("D_alg not computed: no strategy judge (pass --judge-backend)")
        return np.full(len(ctx.records), np.nan)
    from cppo_bench.diversity import algorithmic_diversity, label_tuples

    kind = "plan" if any(r.plans for r in ctx.records) else "code"

    def score(tuples: list[list[str]]) -> list[float]:
        labels = label_tuples(tuples, judge, kind)  # type: ignore[arg-type]
        if labels.unparseable:
            ctx.notes.append("judge replies naming no category were labelled 'other'")
        return [algorithmic_diversity(t) for t in labels.labels]

    return _per_tuple(ctx, score)


_PLANS = "not applicable: the runs hold no plan validity reports"
for _name, _def in {
    "pass": MetricDef("pass@{k}", problem=_pass, derivable=True),
    "maj": MetricDef(
        "maj@{k}",
        problem=_maj,
        derivable=True,
        na_note="maj@K applies to answer-prediction runs (labelled records)",
    ),
    "planner_tokens": MetricDef("planner tok.", 1, problem=_tokens("planner_tokens")),
    "solver_tokens": MetricDef("solver tok.", 1, problem=_tokens("solver_tokens")),
    "tokens": MetricDef("tokens", 1, problem=_tokens(None)),
    "pass_per_10k": MetricDef("pass@{k}/10k tok.", run=_pass_per_10k),
    "dup_rate": MetricDef("dup. rate", problem=_dup_rate, na_note=_PLANS),
    "valid": MetricDef("valid tuples", problem=_valid, na_note=_PLANS),
    "distinct": MetricDef("distinct@{k}", problem=_distinct, na_note="no attempts recorded"),
    "d_surf": MetricDef("D_surf", problem=_d_surf, na_note="no tuple has two or more texts"),
    "d_sem": MetricDef("D_sem", problem=_d_sem, na_note="no tuple has two or more texts"),
    "d_alg": MetricDef("D_alg", problem=_d_alg, na_note="no tuple has two or more texts"),
}.items():
    METRICS.register(_name)(_def)


def metric_label(metric: MetricSpec) -> str:
    return metric.label or METRICS.get(metric.metric).label.replace("{k}", str(metric.k))


def metric_digits(metric: MetricSpec) -> int:
    return metric.digits if metric.digits is not None else METRICS.get(metric.metric).digits
