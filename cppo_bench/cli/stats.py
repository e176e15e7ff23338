"""`cppo-bench stats`: pass@K, significance, per-seed intervals, token efficiency and diversity,
from a run store (--runs) or a CSV of per-problem outcomes (--csv; schema in
cppo_bench/metrics/table.py), so results from anywhere can be re-tested."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from cppo_bench.cli.stats_common import PATH, _frame, _load, _table  # noqa: F401
from cppo_bench.util.termsafe import echo, quote, safe

WINDOW_FLAGS = ("start_date", "end_date", "platform")


def _source(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--runs / --csv / --bench, and LiveCodeBench's window flags (kept in the context for
    `_frame`, so every stats command filters alike without each taking them)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        window = {name: kwargs.pop(name, None) for name in WINDOW_FLAGS}
        click.get_current_context().meta["stats_window"] = window
        return fn(*args, **kwargs)

    wrapper = click.option(
        "--platform", default=None, help="Only problems of this platform (atcoder, leetcode...)."
    )(wrapper)
    wrapper = click.option(
        "--end-date", "--end_date", "end_date", default=None, metavar="YYYY-MM-DD",
        help="Only problems whose contest date is on or before this (LiveCodeBench's flag).",
    )(wrapper)  # fmt: skip
    wrapper = click.option(
        "--start-date", "--start_date", "start_date", default=None, metavar="YYYY-MM-DD",
        help="Only problems whose contest date is on or after this: released after a model's "
        "cutoff (LiveCodeBench's contamination window).",
    )(wrapper)  # fmt: skip
    wrapper = click.option("--csv", "csv_path", type=PATH, help="CSV of per-problem outcomes.")(
        wrapper
    )
    wrapper = click.option("--runs", type=PATH, help="Run store (or one run directory).")(wrapper)
    return click.option("--bench", help="Only this benchmark.")(wrapper)


def _scoring(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--estimator", type=click.Choice(["auto", "first", "unbiased"]), default="auto",
        show_default=True,
        help="pass@k for k below the run's K. auto: each run's own rule (unbiased "
        "1-C(n-c,k)/C(n,k) for exchangeable samples, as lm-eval / LiveCodeBench / evalplus; "
        "first-K for ordered tuples: cppo, fixed_strategy, skills); first: the first-K rule "
        "on the rollout for every run; unbiased: the unbiased estimator for every run.",
    )(fn)  # fmt: skip
    fn = click.option(
        "--select", type=click.Choice(["first", "last", "random"]), default=None,
        help="Which K of a 4-tuple count (default: the run's own setting, else first).",
    )(fn)  # fmt: skip
    fn = click.option("--seed", default=0, show_default=True, help="Seed of random selection.")(fn)
    return fn


def _ks(text: str | None) -> list[int]:
    if text is None:
        return []
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {quote(text)}") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter(f"every k must be >= 1, got {quote(text)}")
    return ks


@click.group("stats")
def stats() -> None:
    """Metrics and significance tests on saved results.

    CSV input: columns method, problem_id, and outcomes (per-branch 0/1 string in rollout
    order, e.g. 0110) or passed (0/1); optional seed, benchmark, planner_tokens, solver_tokens.
    """


@stats.command("passk")
@_source
@click.option(
    "--k", "k_text", default=None,
    help="Comma-separated K (default: those of 1,2,4 the runs allow; the others are named).",
)  # fmt: skip
@_scoring
@click.option(
    "--spread",
    type=click.Choice(["study", "seed-std", "bootstrap-se"]),
    default="study",
    show_default=True,
    help="The ±, named next to it. study: trained methods std over training seeds, "
    "inference-only bootstrap SE over problems (as `report`); seed-std or bootstrap-se: "
    "that one for every method.",
)
@click.option(
    "--resamples", default=1000, show_default=True, type=click.IntRange(min=1),
    help="Bootstrap resamples of the SE (the report's default).",
)  # fmt: skip
@click.option(
    "--by",
    type=click.Choice(["difficulty", "platform", "month", "window"]),
    default=None,
    help="One row per group of problems: difficulty (LiveCodeBench's easy/medium/hard), "
    "platform, contest month, or LiveCodeBench release window.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def passk(
    runs, csv_path, bench, k_text, estimator, select, seed, spread, resamples, as_json, by=None
) -> None:
    """pass@K per benchmark and method: mean ± the study's uncertainty (trained: std over
    training seeds; inference-only: bootstrap SE over problems), with n and coverage."""
    from cppo_bench import stats as api

    frame = _frame(runs, csv_path, bench)
    ks = _ks(k_text)
    left: list[str] = []
    if k_text is None:
        ks, left = api.allowed_ks(frame, api.DEFAULT_KS, estimator=estimator,
                                  select=select, seed=seed)  # fmt: skip
    for line in left:  # a default k the runs cannot give: named, not a stop
        echo(line, err=True)
    options = dict(estimator=estimator, select=select, spread=spread, resamples=resamples,
                   seed=seed)  # fmt: skip
    if by is not None:
        _print_grouped(api.pass_at_k_by(frame, by, ks, **options), by, ks, estimator, as_json)
        return
    table = api.pass_at_k(frame, ks, **options)
    warnings = table.attrs["warnings"]
    cells: dict[tuple[str, str], dict[int, Any]] = {}
    for c in table["cell"] if len(table) else []:
        cells.setdefault((c.benchmark, c.method), {})[c.k] = c
    for w in warnings:
        echo(f"warning: {w}", err=True)
    if as_json:
        tests = table.attrs.get("tests", {})
        out = [{**c.to_dict(), "tests": tests.get(c.benchmark, [])}
               for _, per_k in sorted(cells.items()) for c in per_k.values()]  # fmt: skip
        echo(json.dumps(out, indent=1), lines=True, whole=True)
        return
    body, notes = [], []
    for (b, m), per_k in sorted(cells.items()):
        first = next(iter(per_k.values()))
        row = [b, m, str(len(first.seeds))]
        row += [_pm(per_k[k].value) if k in per_k else "-" for k in ks]
        row += [first.tally.text() or "-", first.estimator or "-"]
        body.append(row)
        if first.missing_text() and first.missing_text() not in notes:
            notes.append(first.missing_text())
    _table(
        f"pass@K (estimator {estimator}: named per row)",
        ["benchmark", "method", "seeds"] + [f"pass@{k}" for k in ks] + ["plans", "estimator"],
        body,
    )
    for note in notes:
        echo(f"missing: {note}")
    for bench, texts in sorted(table.attrs.get("tests", {}).items()):
        for text in texts:  # what the scores rest on: public examples only is not a verdict
            echo(f"tests ({safe(bench)}): {safe(text)}")


def _print_grouped(table: Any, by: str, ks: list[int], estimator: str, as_json: bool) -> None:
    """`passk --by`: one row per benchmark, group and method."""
    for w in table.attrs.get("warnings", []):
        echo(f"warning: {w}", err=True)
    cells: dict[tuple[str, str, str], dict[int, Any]] = {}
    marks: dict[tuple[str, str, str], str] = {}
    for _, row in table.iterrows() if len(table) else []:
        c = row["cell"]
        cells.setdefault((c.benchmark, row[by], c.method), {})[c.k] = c
        marks[(c.benchmark, row[by], c.method)] = row.get("run_partial") or ""
    if as_json:
        out = [{**c.to_dict(), by: g, "run_partial": marks[(b, g, m)]}
               for (b, g, m), per_k in cells.items() for c in per_k.values()]  # fmt: skip
        echo(json.dumps(out, indent=1), lines=True, whole=True)
        return
    body = []
    for (b, g, m), per_k in cells.items():  # groups in pass_at_k_by's order
        first = next(iter(per_k.values()))
        body.append([b, g, m, str(len(first.seeds))]
                    + [_pm(per_k[k].value) if k in per_k else "-" for k in ks]
                    + [marks[(b, g, m)] or "-"])  # fmt: skip
    _table(f"pass@K ({estimator}) by {by}", ["benchmark", by, "method", "seeds"]
           + [f"pass@{k}" for k in ks] + ["coverage"], body)  # fmt: skip


def _pm(u: Any) -> str:
    """'0.625 ± 0.086 (bootstrap SE, n=32, 3 seeds)': the ± named, with its coverage."""
    return str(u)


@stats.command("bootstrap")
@_source
@click.option("--a", "cands", multiple=True, required=True, help="Method to test (repeatable).")
@click.option(
    "--b",
    "bases",
    multiple=True,
    help="Baseline(s); the strongest is used. Default: every other method.",
)
@click.option(
    "--k", default=None, type=click.IntRange(min=1),
    help="pass@K compared (default: the largest K up to 4 the runs allow, named).",
)  # fmt: skip
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(min=1))
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1))
@_scoring
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def bootstrap(
    runs, csv_path, bench, cands, bases, k, resamples, alpha, estimator, select, seed, as_json
) -> None:
    """Hierarchical bootstrap (problems and seeds resampled): one-sided p that A beats the
    strongest baseline, per benchmark (the study's dagger test)."""
    from cppo_bench import stats as api

    table = api.bootstrap(_frame(runs, csv_path, bench), cands, bases, k=k,
                          resamples=resamples, alpha=alpha, estimator=estimator,
                          select=select, seed=seed)  # fmt: skip
    for line in [*table.attrs["left_out"], *table.attrs["skipped"]]:
        echo(line, err=True)
    k = table.attrs["k"]
    out = table.to_dict("records")
    if not out:
        raise click.ClickException("nothing to compare: no benchmark has both --a and a baseline")
    if as_json:
        echo(json.dumps(out, indent=1), lines=True, whole=True)
        return
    body = [
        [r["benchmark"], r["method"], f"{r['score']:.3f}", r["baseline"], f"{r['baseline_score']:.3f}",
         f"{r['p_value']:.4f}", "†" if r["significant"] else "", _shared(r['problems'], r['dropped']),
         r["estimator"] if r["estimator"] == r["baseline_estimator"]
         else f"{r['estimator']} / {r['baseline_estimator']}"]
        for r in out
    ]  # fmt: skip
    cols = [
        "benchmark",
        "method",
        f"pass@{k}",
        "baseline",
        f"pass@{k}",
        "p (A>B)",
        f"p<{alpha}",
        "problems",
        "estimator",
    ]
    _table(f"hierarchical bootstrap, {resamples} resamples, seed {seed}", cols, body)


def _shared(problems: int, dropped: int) -> str:
    """'30 shared (2 not in every run)' instead of '30 (-2)'."""
    return f"{problems} shared ({dropped} not in every run)" if dropped else str(problems)


@stats.command("seeds")
@_source
@click.option("--a", "a", help="Method A (trained, several seeds).")
@click.option("--b", "b", help="Method B: matched seed by seed, or its single run for every seed.")
@click.option("--deltas", help="Per-seed differences given directly, e.g. 0.010,0.021,0.038.")
@click.option(
    "--k", default=None, type=click.IntRange(min=1),
    help="pass@K (default: the largest K up to 4 the runs allow, named).",
)  # fmt: skip
@click.option(
    "--confidence",
    default=0.95,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
)
@_scoring
def seeds(runs, csv_path, bench, a, b, deltas, k, confidence, estimator, select, seed) -> None:
    """Per-seed differences A - B of benchmark pass@K: mean and Student-t interval."""
    from cppo_bench import stats as api
    from cppo_bench.metrics import seed_difference_ci

    body = []
    if deltas:
        d = [float(x) for x in deltas.split(",")]
        ci = seed_difference_ci(d, confidence)
        body.append(["-", "given", ", ".join(f"{x:+.3f}" for x in d), str(ci), "given"])
    else:
        if not (a and b):
            raise click.UsageError("give --deltas, or --a and --b with --runs/--csv")
        table = api.seeds(_frame(runs, csv_path, bench), a, b, k=k, confidence=confidence,
                          estimator=estimator, select=select, seed=seed)  # fmt: skip
        k = table.attrs["k"]
        for line in table.attrs["left_out"]:  # a larger k the runs cannot give: named
            echo(line, err=True)
        for r in table.to_dict("records"):
            deltas_text = ", ".join(f"{x:+.3f}" for x in r["deltas"])
            body.append([r["benchmark"], r["method"], deltas_text, str(r["ci"]), r["estimator"]])
    if not body:
        raise click.ClickException(f"no benchmark has results for both {quote(a)} and {quote(b)}")
    _table(
        f"per-seed differences of pass@{k or 'K'}, {confidence:.0%} t interval",
        ["benchmark", "method", "deltas", "mean [CI]", "estimator"],
        body,
    )


@stats.command("tokens")
@_source
@click.option(
    "--k", default=None, type=click.IntRange(min=1),
    help="pass@K (default: the largest K up to 4 the runs allow, named).",
)  # fmt: skip
@_scoring
def tokens(runs, csv_path, bench, k, estimator, select, seed) -> None:
    """Decoded planner / solver tokens per problem and pass@K per 10k decoded tokens."""
    from cppo_bench import stats as api

    table = api.tokens(
        _frame(runs, csv_path, bench), k=k, estimator=estimator, select=select, seed=seed
    )
    k = table.attrs["k"]
    for line in table.attrs["left_out"]:
        echo(line, err=True)
    body = []
    for r in table.to_dict("records"):
        if r["tokens"] is None or r["tokens"] != r["tokens"]:  # None, or NaN in a float column
            body.append(
                [
                    r["benchmark"],
                    r["method"],
                    "-",
                    "-",
                    "-",
                    f"{r['pass_at_k']:.3f}",
                    "-",
                    r["estimator"],
                ]
            )
            continue
        eff = "-" if r["per_10k"] is None or r["per_10k"] != r["per_10k"] else f"{r['per_10k']:.3f}"
        body.append([r["benchmark"], r["method"], f"{r['planner']:.1f}", f"{r['solver']:.1f}",
                     f"{r['tokens']:.1f}", f"{r['pass_at_k']:.3f}", eff, r["estimator"]])  # fmt: skip
    cols = ["benchmark", "method", "planner", "solver", "tokens", f"pass@{k}", f"pass@{k}/10k",
            "estimator"]  # fmt: skip
    _table("decoded tokens per problem (prompt tokens excluded)", cols, body)


# registered here, defined there (stats.py stays under the project's file size)
from cppo_bench.cli.stats_diversity import diversity  # noqa: E402

stats.add_command(diversity)
