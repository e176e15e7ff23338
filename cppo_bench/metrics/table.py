"""Per-problem results as the statistics read them: OutcomeRows, scored here. Pure: a run
store or an outcome CSV is read into a DataFrame by cppo_bench.store.frames (the public
`cppo_bench.load_runs`, cppo_bench.stats.read) and into OutcomeRows by
cppo_bench.stats.read.rows_of, on the caller's side; nothing here reads a file.

CSV schema (a header row; comma-separated; one row per benchmark, method, seed and problem):

    method        required  method label, e.g. cppo, direct
    problem_id    required
    outcomes      per-branch results in rollout order as a string of 0/1, e.g. 0110
                  (spaces or | between them are ignored: "0|1|1|0", for spreadsheets)
    passed        0/1 (or true/false): solved under the method's budget (pass@K already
                  applied); give `outcomes` or `passed` (at least one)
    seed          optional  training seed (int, default 0; inference-only methods use one)
    trained       optional  the trained checkpoint's tag (e.g. cppo, pkpo); empty for an
                  inference-only method. Decides the ± `stats passk` shows (std over
                  training seeds vs bootstrap SE over problems); without the column no
                  method is trained: several seeds are sampling seeds (a warning names them)
    benchmark     optional  default "-"
    planner_tokens, solver_tokens   optional  decoded tokens for the problem
    estimator     optional  how pass@k < (number of branches) is scored for the row:
                  unbiased (exchangeable samples) or first (the first-K rule on an
                  ordered rollout); default: the registered method's own rule
                  (cppo, fixed_strategy, skills: first), else unbiased

With `outcomes`, pass@k is computed for any k the row has branches for; with only `passed`,
the row scores `passed` whatever k is asked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from cppo_bench.errors import DataError
from cppo_bench.metrics.majk import maj_at_k
from cppo_bench.metrics.passk import (
    Select,
    branches_needed,
    pass_at_k,
    pass_at_k_first,
)
from cppo_bench.store.outcomes import (  # noqa: F401
    CSV_COLUMNS,
    ESTIMATOR_CHOICES,
    ESTIMATORS,
    SELECTS,
    OutcomeRow,
    _tuples_of,
    tuple_texts,
)
from cppo_bench.util.termsafe import quote


def row_scores(
    rows: Sequence[OutcomeRow],
    k: int,
    *,
    estimator: str = "auto",
    select: Select | None = None,
    seed: int = 0,
) -> np.ndarray:
    """Per-row pass@k (or maj@k for answer-prediction rows) as floats.

    estimator "auto": each row's own `estimator` (its method's rule); "first": the first-K
    rule on the rollout, with each row's own `select` unless `select` overrides it;
    "unbiased": 1 - C(n-c,k)/C(n,k) over the row's branches.
    """
    if estimator not in ESTIMATOR_CHOICES:
        raise DataError(
            f"estimator must be one of {', '.join(ESTIMATOR_CHOICES)}, got {quote(estimator)}"
        )
    out = np.empty(len(rows), dtype=np.float64)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        est = row.estimator if estimator == "auto" else estimator
        if row.label is not None and row.answers:
            out[i] = float(maj_at_k(row.answers, row.label, k))
        elif row.outcomes is None:
            out[i] = float(bool(row.passed))
        elif est == "unbiased":
            n = len(row.outcomes)
            if n < k:
                raise DataError(f"{_where(row)}: {n} branches, pass@{k} needs {k}")
            out[i] = float(pass_at_k(n, sum(row.outcomes), k))
        else:
            groups[select or row.select].append(i)
    for sel, idx in groups.items():
        if sel not in SELECTS:
            raise DataError(f"{_where(rows[idx[0]])}: unknown select rule {quote(sel)}")
        need = branches_needed(k, sel)  # type: ignore[arg-type]
        for i in idx:
            have = len(rows[i].outcomes or ())
            if have < need:
                raise DataError(
                    f"{_where(rows[i])}: {have} branches; pass@{k} (select {sel}) needs {need}"
                )
        mat = [rows[i].outcomes for i in idx]
        out[idx] = pass_at_k_first(mat, k, sel, seed=seed)  # type: ignore[arg-type]
    return out


def estimator_name(
    rows: Iterable[OutcomeRow], estimator: str = "auto", select: str | None = None
) -> str:
    """How `row_scores(rows, k, estimator=..., select=...)` scored these rows' pass@k, in
    words for a table cell or title: "unbiased", "first-K (select last)", "maj@K", or
    several joined by " + " when the rows differ (a table over many methods)."""
    names: list[str] = []
    for row in rows:
        if row.label is not None and row.answers:
            name = "maj@K"
        elif row.outcomes is None:
            name = "given"
        else:
            est = row.estimator if estimator == "auto" else estimator
            sel = select or row.select
            name = (
                "unbiased"
                if est == "unbiased"
                else "first-K" + (f" (select {sel})" if sel != "first" else "")
            )
        if name not in names:
            names.append(name)
    return " + ".join(names) or "-"


def _where(row: OutcomeRow) -> str:
    return f"{row.benchmark}/{row.method}/seed {row.seed}/{row.problem_id}"


Scores = dict[str, dict[str, dict[int, dict[str, float]]]]  # bench -> method -> seed -> pid -> s


def group_scores(rows: Sequence[OutcomeRow], scores: Iterable[float]) -> Scores:
    """Nest per-row scores as benchmark -> method -> seed -> problem_id -> score."""
    nested: Scores = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for row, s in zip(rows, scores, strict=True):
        nested[row.benchmark][row.method][row.seed][row.problem_id] = float(s)
    return nested


def method_matrices(
    by_method: dict[str, dict[int, dict[str, float]]], methods: Sequence[str]
) -> tuple[dict[str, np.ndarray], list[str], int]:
    """[seeds][problems] arrays over the problems every seed of every method has (sorted ids).

    Returns the arrays, the shared problem ids, and how many ids were dropped for lack of a
    result somewhere (a bootstrap must compare the same problems).
    """
    unknown = [m for m in methods if m not in by_method]
    if unknown:
        raise DataError(
            f"no results for method(s) {', '.join(unknown)}; have {', '.join(sorted(by_method))}"
        )
    id_sets = [set(ids) for m in methods for ids in by_method[m].values()]
    shared = sorted(set.intersection(*id_sets))
    dropped = len(set.union(*id_sets)) - len(shared)
    if not shared:
        raise DataError(f"methods {', '.join(methods)} have no problem in common")
    arrays = {
        m: np.array([[by_method[m][s][p] for p in shared] for s in sorted(by_method[m])])
        for m in methods
    }
    return arrays, shared, dropped
