"""Statistics on a results frame (`cppo_bench.load_runs` or `cppo_bench.store.frames.read_outcomes`),
as DataFrames; `cppo-bench stats` prints exactly these. The math is cppo_bench.metrics'
(pass@K estimators, the study's uncertainty rule in metrics/uncertainty.py, the hierarchical
bootstrap, the per-seed t interval); this module only groups and tabulates.

    import cppo_bench as cb
    frame = cb.load_runs("runs/")
    cb.stats.pass_at_k(frame, k=[1, 4])      # mean ± the study's uncertainty, with n
    cb.stats.bootstrap(frame, a="cppo")      # one-sided p that cppo beats the best baseline
    cb.stats.seeds(frame, a="cppo", b="pkpo")
    cb.stats.pass_at_k_by(cb.stats.window(frame, start_date="2024-08-01"), "difficulty")
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from cppo_bench.errors import DataError, UserError
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd

F = TypeVar("F", bound=Callable[..., Any])


def _takes_frame(fn: F) -> F:
    """The public statistics check their frame first: a wrong argument is one DataError,
    never an AttributeError from inside pandas. The pure metrics below refuse what they cannot
    score with ValueError / KeyError, as numpy and scipy do; here, at the edge where a user's
    runs come in, that refusal becomes the user's DataError (one line, cppo_bench.errors)."""

    @functools.wraps(fn)
    def checked(frame: Any, *args: Any, **kwargs: Any) -> Any:
        from cppo_bench.store.frames import check_frame

        check_frame(frame)
        try:
            return fn(frame, *args, **kwargs)
        except (ValueError, KeyError) as exc:
            if isinstance(exc, UserError):
                raise
            raise DataError(str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)) from None

    return checked  # type: ignore[return-value]


__all__ = [
    "DEFAULT_KS",
    "allowed_ks",
    "bootstrap",
    "pass_at_k",
    "pass_at_k_by",
    "seeds",
    "tokens",
    "window",
]

DEFAULT_KS = (1, 2, 4)  # `stats passk` without --k: those of these the runs allow


@_takes_frame
def window(frame: pd.DataFrame, **bounds: Any) -> pd.DataFrame:
    """Rows in a contest-date window / on a platform (cppo_bench.stats.slices.window)."""
    from cppo_bench.stats.slices import window as cut

    return cut(frame, **bounds)


@_takes_frame
def pass_at_k_by(frame: pd.DataFrame, by: str, k: Any = None, **options: Any) -> pd.DataFrame:
    """pass@k per difficulty / platform / month / release window (cppo_bench.stats.slices);
    `k` None: those of DEFAULT_KS the runs allow (``.attrs["left_out"]`` says which not)."""
    from cppo_bench.stats.slices import pass_at_k_by as grouped

    left: list[str] = []
    if k is None:
        picked = {n: options[n] for n in ("estimator", "select", "seed") if n in options}
        k, left = allowed_ks(frame, DEFAULT_KS, **picked)
    out = grouped(frame, by, k, measure=pass_at_k, **options)
    out.attrs["left_out"] = left
    return out


@_takes_frame
def allowed_ks(
    frame: pd.DataFrame,
    candidates: Sequence[int] = DEFAULT_KS,
    *,
    estimator: str = "auto",
    select: str | None = None,
    seed: int = 0,
) -> tuple[list[int], list[str]]:
    """The k of `candidates` at which every row can be scored, and one line per k left out
    naming why (the first row that cannot give it). Asked of `row_scores` itself, the
    function every number is scored by, so a default never promises what scoring refuses.
    None allowed is one DataError line with the reasons."""
    from cppo_bench.metrics.table import row_scores
    from cppo_bench.stats.read import rows_of

    rows = rows_of(frame)
    ks, left = [], []
    for kk in candidates:
        try:
            row_scores(rows, kk, estimator=estimator, select=select, seed=seed)  # type: ignore[arg-type]
        except DataError as exc:
            left.append(f"pass@{kk} left out: {exc}")
            continue
        ks.append(kk)
    if not ks:
        raise DataError("no k the runs allow: " + "; ".join(left))
    return ks, left


def largest_allowed_k(
    frame: pd.DataFrame, estimator: str = "auto", select: str | None = None, seed: int = 0
) -> tuple[int, list[str]]:
    """The default k of a one-k command: the largest up to 4 every row can be scored at, and
    the lines naming the larger ones left out (runs made with --k 2 give pass@2, said)."""
    ks, left = allowed_ks(frame, (1, 2, 3, 4), estimator=estimator, select=select, seed=seed)
    return ks[-1], left  # scoring needs more branches for a larger k: those left out are larger


def _ks(k: int | Sequence[int]) -> list[int]:
    ks: list[Any] = [k] if not isinstance(k, list | tuple | range) else list(k)
    if any(type(x) is not int for x in ks):  # "x", 1.5 or True is not a budget
        raise DataError(f"every k must be an integer >= 1, got {quote(k, 80)}")
    if not ks or min(ks) < 1:
        raise DataError(f"every k must be >= 1, got {quote(k)}")
    return ks


def _scored(frame: pd.DataFrame, k: int, estimator: str, select: str | None, seed: int) -> Any:
    from cppo_bench.metrics.table import group_scores, row_scores
    from cppo_bench.stats.read import rows_of

    rows = rows_of(frame)
    scores = row_scores(rows, k, estimator=estimator, select=select, seed=seed)  # type: ignore[arg-type]
    return rows, scores, group_scores(rows, scores)


def _estimators(rows: Any, estimator: str, select: str | None) -> dict[tuple[str, str], str]:
    """(benchmark, method) -> how its pass@k was scored, in words (every table names it)."""
    from cppo_bench.metrics.table import estimator_name

    groups: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        groups.setdefault((r.benchmark, r.method), []).append(r)
    return {key: estimator_name(rs, estimator, select) for key, rs in groups.items()}


@_takes_frame
def pass_at_k(
    frame: pd.DataFrame,
    k: int | Sequence[int] | None = None,
    *,
    estimator: str = "auto",
    select: str | None = None,
    spread: str = "study",
    resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """pass@k per benchmark, method and k: the mean and the study's uncertainty (trained
    methods: std over training seeds; inference-only: bootstrap SE over problems; `spread`
    "seed-std" or "bootstrap-se" forces one), with its coverage. Columns: benchmark,
    method, k, mean, spread, spread_kind, problems, problems_total, partial, seeds,
    missing, text (what `cppo-bench stats passk` prints) and `cell` (the StatsCell).
    `estimator` "auto" (default): each run's own rule (its method's `passk_rule`: the
    unbiased estimator for exchangeable samples, the first-K rule for ordered tuples);
    "first": the first-K rule on the rollout (each run's own `select`, unless given);
    "unbiased": 1 - C(n-c,k)/C(n,k). Column `estimator` names the one used. `k` None: the
    k of DEFAULT_KS the runs allow (`allowed_ks`; the others, and why, are in
    ``.attrs["left_out"]``). Warnings (a
    method whose seeds share no problem) are in ``.attrs["warnings"]``; what each
    benchmark's scores rest on (test kinds and counts, release) in ``.attrs["tests"]``."""
    import pandas as pd

    from cppo_bench.metrics.cells import stats_cells

    out, warnings = [], list(frame.attrs.get("warnings", []))
    left: list[str] = []
    if k is None:
        ks, left = allowed_ks(frame, DEFAULT_KS, estimator=estimator, select=select, seed=seed)
    else:
        ks = _ks(k)
    for kk in ks:
        rows, _, nested = _scored(frame, kk, estimator, select, seed)
        cells, warned = stats_cells(rows, nested, kk, spread, resamples, seed)  # type: ignore[arg-type]
        warnings += [w for w in warned if w not in warnings]
        named = _estimators(rows, estimator, select)
        for c in cells:
            c.estimator = named.get((c.benchmark, c.method), "")
            d = c.to_dict()
            del d["std"], d["std_over"], d["validity"]
            out.append({**d, "text": str(c.value), "cell": c})
    result = pd.DataFrame(out)
    result.attrs["warnings"] = warnings
    result.attrs["left_out"] = left
    result.attrs["tests"] = _tests(frame)
    return result


def _tests(frame: pd.DataFrame) -> dict[str, list[str]]:
    """benchmark -> what its scores rest on (test kinds and counts, release), each text once."""
    if "tests" not in frame.columns:
        return {}
    out: dict[str, list[str]] = {}
    for bench, text in zip(frame["benchmark"], frame["tests"], strict=True):
        if isinstance(text, str) and text and text not in out.setdefault(str(bench), []):
            out[str(bench)].append(text)
    return out


@_takes_frame
def bootstrap(
    frame: pd.DataFrame,
    a: str | Sequence[str],
    b: str | Sequence[str] = (),
    *,
    k: int | None = None,
    resamples: int = 1000,
    alpha: float = 0.05,
    estimator: str = "auto",
    select: str | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """The study's dagger test per benchmark: a hierarchical bootstrap (problems and seeds
    resampled) of the one-sided p that each method of `a` beats the strongest of `b`
    (default: every other method) on the problems they share. One row per benchmark and
    method of `a`: score, baseline, baseline_score, p_value, significant (p < alpha),
    problems (shared), dropped (not in every run), resamples. Benchmarks lacking a method
    are listed in ``.attrs["skipped"]``. `k` None: the largest k up to 4 the runs allow
    (``.attrs["k"]``; the larger ones left out, and why, in ``.attrs["left_out"]``)."""
    import pandas as pd

    from cppo_bench.metrics import dagger_marks, hierarchical_bootstrap
    from cppo_bench.metrics.table import method_matrices

    cands = [a] if isinstance(a, str) else list(a)
    bases = [b] if isinstance(b, str) else list(b)
    out, skipped = [], []
    left: list[str] = []
    if k is None:
        k, left = largest_allowed_k(frame, estimator, select, seed)
    rows, _, nested = _scored(frame, k, estimator, select, seed)
    named = _estimators(rows, estimator, select)
    for bench, methods in sorted(nested.items()):
        pool = bases or [m for m in sorted(methods) if m not in cands]
        missing = [m for m in (*cands, *pool) if m not in methods]
        if missing or not pool:
            skipped.append(
                f"{bench}: skipped (no results for {', '.join(missing) or 'any baseline'})"
            )
            continue
        arrays, shared, dropped = method_matrices(methods, [*cands, *pool])
        result = hierarchical_bootstrap(arrays, resamples=resamples, seed=seed)
        for d in dagger_marks(result, cands, pool, alpha):
            out.append({
                "benchmark": bench, "method": d.method, "score": result.observed[d.method],
                "estimator": named[(bench, d.method)],
                "baseline": d.baseline, "baseline_estimator": named[(bench, d.baseline)],
                "baseline_score": result.observed[d.baseline],
                "p_value": d.p_value, "significant": d.significant,
                "problems": len(shared), "dropped": dropped, "resamples": resamples,
            })  # fmt: skip
    table = pd.DataFrame(out)
    table.attrs["skipped"] = skipped
    table.attrs["k"], table.attrs["left_out"] = k, left
    return table


@_takes_frame
def seeds(
    frame: pd.DataFrame,
    a: str,
    b: str,
    *,
    k: int | None = None,
    confidence: float = 0.95,
    estimator: str = "auto",
    select: str | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Per-seed differences A - B of benchmark pass@k (B matched seed by seed, or its single
    run for every seed of A), their mean and Student-t interval. One row per benchmark with
    both: benchmark, method ("A - B"), deltas (list), mean, low, high, confidence, ci.
    `k` None: the largest k up to 4 the runs allow (``.attrs["k"]``, ``.attrs["left_out"]``)."""
    import pandas as pd

    from cppo_bench.metrics import seed_difference_ci
    from cppo_bench.metrics.table import method_matrices

    out = []
    left: list[str] = []
    if k is None:
        k, left = largest_allowed_k(frame, estimator, select, seed)
    rows, _, nested = _scored(frame, k, estimator, select, seed)
    named = _estimators(rows, estimator, select)
    for bench, methods in sorted(nested.items()):
        if a not in methods or b not in methods:
            continue
        arrays, _, _ = method_matrices(methods, [a, b])
        sa, sb = sorted(methods[a]), sorted(methods[b])
        pa, pb = arrays[a].mean(axis=1), arrays[b].mean(axis=1)
        if len(sb) == 1:
            d = [float(x - pb[0]) for x in pa]
        else:
            common = sorted(set(sa) & set(sb))
            d = [float(pa[sa.index(s)] - pb[sb.index(s)]) for s in common]
        ci = seed_difference_ci(d, confidence)
        out.append({
            "benchmark": bench, "method": f"{a} - {b}",
            "estimator": named[(bench, a)] if named[(bench, a)] == named[(bench, b)]
            else f"{a}: {named[(bench, a)]}; {b}: {named[(bench, b)]}", "deltas": d,
            "mean": ci.mean,
            "low": ci.low, "high": ci.high, "confidence": confidence, "ci": ci,
        })  # fmt: skip
    table = pd.DataFrame(out)
    table.attrs.update(k=k, left_out=left)
    return table


@_takes_frame
def tokens(
    frame: pd.DataFrame,
    *,
    k: int | None = None,
    estimator: str = "auto",
    select: str | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Decoded tokens per problem (prompt excluded) and pass@k per 10k decoded tokens, per
    benchmark and method: planner, solver, tokens (means; None where a row lacks counts),
    pass_at_k, per_10k. `k` None: the largest k up to 4 the runs allow (``.attrs``)."""
    import pandas as pd

    from cppo_bench.metrics import pass_per_10k_tokens, summarise_tokens

    left: list[str] = []
    if k is None:
        k, left = largest_allowed_k(frame, estimator, select, seed)
    rows, scores, _ = _scored(frame, k, estimator, select, seed)
    named = _estimators(rows, estimator, select)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r.benchmark, r.method), []).append(i)
    out = []
    for (bench, method), idx in sorted(groups.items()):
        pk = float(scores[idx].mean())
        line: dict[str, Any] = {"benchmark": bench, "method": method,
                                "estimator": named[(bench, method)], "planner": None,
                                "solver": None, "tokens": None, "pass_at_k": pk, "per_10k": None}  # fmt: skip
        if all(
            rows[i].planner_tokens is not None and rows[i].solver_tokens is not None for i in idx
        ):
            t = summarise_tokens(
                [rows[i].planner_tokens for i in idx], [rows[i].solver_tokens for i in idx]
            )
            line.update(planner=t.planner_mean, solver=t.solver_mean, tokens=t.mean)
            if t.mean > 0:
                line["per_10k"] = pass_per_10k_tokens(pk, t.mean)
        out.append(line)
    table = pd.DataFrame(out)
    table.attrs.update(k=k, left_out=left)
    return table
