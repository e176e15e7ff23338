"""`cppo-bench stats`: pass@K, significance, per-seed intervals, token efficiency and diversity,
from a run store (--runs) or a CSV of per-problem outcomes (--csv; schema in
cppo_bench/metrics/table.py), so results from anywhere can be re-tested."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from cppo_bench.util.termsafe import markup, safe

PATH = click.Path(exists=True, path_type=Path)


@contextmanager
def _clean_errors() -> Iterator[None]:
    """Bad input ends in one line naming the file or record, never a traceback."""
    from cppo_bench.errors import DataError

    try:
        yield
    except (DataError, ValueError, KeyError) as exc:
        raise click.ClickException(str(exc.args[0] if isinstance(exc, KeyError) else exc)) from None


def _source(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--csv", "csv_path", type=PATH, help="CSV of per-problem outcomes.")(fn)
    fn = click.option("--runs", type=PATH, help="Run store (or one run directory).")(fn)
    fn = click.option("--bench", help="Only this benchmark.")(fn)
    return fn


def _scoring(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--estimator", type=click.Choice(["first", "unbiased"]), default="first", show_default=True,
        help="first: the first-K rule on the rollout (tuple methods); unbiased: 1-C(n-c,k)/C(n,k).",
    )(fn)  # fmt: skip
    fn = click.option(
        "--select", type=click.Choice(["first", "last", "random"]), default=None,
        help="Which K of a 4-tuple count (default: the run's own setting, else first).",
    )(fn)  # fmt: skip
    fn = click.option("--seed", default=0, show_default=True, help="Seed of random selection.")(fn)
    return fn


def _frame(runs: Path | None, csv_path: Path | None, bench: str | None) -> Any:
    """The results frame the API's statistics take (cppo_bench.store.frames)."""
    from cppo_bench.store.frames import load_runs, read_outcomes

    if (runs is None) == (csv_path is None):
        raise click.UsageError("give exactly one of --runs DIR or --csv FILE")
    if runs is not None:
        from cppo_bench.util.progress import progress_bar

        with progress_bar("reading runs") as advance:
            frame = load_runs(
                runs, warn=lambda w: click.echo(f"warning: {safe(w)}", err=True), progress=advance
            )
    else:
        frame = read_outcomes(csv_path)
    if bench is not None:
        frame = frame[frame["benchmark"] == bench]
        if frame.empty:
            raise click.ClickException(f"no results for benchmark {bench!r}")
    return frame


def _load(runs: Path | None, csv_path: Path | None, bench: str | None) -> list:
    """The frame's rows as OutcomeRows (for `stats diversity`)."""
    from cppo_bench.store.frames import rows_of

    return rows_of(_frame(runs, csv_path, bench))


def _ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter(f"every k must be >= 1, got {text!r}")
    return ks


def _table(title: str, columns: list[str], body: list[list[str]]) -> None:
    from rich.table import Table

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="left" if c in ("benchmark", "method") else "right")
    for line in body:
        table.add_row(*map(markup, line))  # cells hold names from the run store
    console = Console()
    if not console.is_terminal:  # piped or logged: never fold a labelled number
        console = Console(width=100_000)
    console.print(table)


@click.group("stats")
def stats() -> None:
    """Metrics and significance tests on saved results.

    CSV input: columns method, problem_id, and outcomes (per-branch 0/1 string in rollout
    order, e.g. 0110) or passed (0/1); optional seed, benchmark, planner_tokens, solver_tokens.
    """


@stats.command("passk")
@_source
@click.option("--k", "k_text", default="1,2,4", show_default=True, help="Comma-separated K.")
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
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def passk(
    runs, csv_path, bench, k_text, estimator, select, seed, spread, resamples, as_json
) -> None:
    """pass@K per benchmark and method: mean ± the study's uncertainty (trained: std over
    training seeds; inference-only: bootstrap SE over problems), with n and coverage."""
    from cppo_bench import stats as api

    with _clean_errors():
        frame, ks = _frame(runs, csv_path, bench), _ks(k_text)
        table = api.pass_at_k(frame, ks, estimator=estimator, select=select, spread=spread,
                              resamples=resamples, seed=seed)  # fmt: skip
    warnings = table.attrs["warnings"]
    cells: dict[tuple[str, str], dict[int, Any]] = {}
    for c in table["cell"] if len(table) else []:
        cells.setdefault((c.benchmark, c.method), {})[c.k] = c
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        out = [c.to_dict() for _, per_k in sorted(cells.items()) for c in per_k.values()]
        click.echo(json.dumps(out, indent=1))
        return
    body, notes = [], []
    for (b, m), per_k in sorted(cells.items()):
        first = next(iter(per_k.values()))
        line = [b, m, str(len(first.seeds))]
        line += [_pm(per_k[k].value) if k in per_k else "-" for k in ks]
        line += [first.tally.text() or "-"]
        body.append(line)
        if first.missing_text() and first.missing_text() not in notes:
            notes.append(first.missing_text())
    _table(
        f"pass@K ({estimator})",
        ["benchmark", "method", "seeds"] + [f"pass@{k}" for k in ks] + ["plans"],
        body,
    )
    for note in notes:
        click.echo(f"missing: {note}")


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
@click.option("--k", default=4, show_default=True, type=click.IntRange(min=1))
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

    with _clean_errors():
        table = api.bootstrap(_frame(runs, csv_path, bench), cands, bases, k=k,
                              resamples=resamples, alpha=alpha, estimator=estimator,
                              select=select, seed=seed)  # fmt: skip
    for line in table.attrs["skipped"]:
        click.echo(line, err=True)
    out = table.to_dict("records")
    if not out:
        raise click.ClickException("nothing to compare: no benchmark has both --a and a baseline")
    if as_json:
        click.echo(json.dumps(out, indent=1))
        return
    body = [
        [r["benchmark"], r["method"], f"{r['score']:.3f}", r["baseline"], f"{r['baseline_score']:.3f}",
         f"{r['p_value']:.4f}", "†" if r["significant"] else "", _shared(r['problems'], r['dropped'])]
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
@click.option("--k", default=4, show_default=True, type=click.IntRange(min=1))
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
    with _clean_errors():
        if deltas:
            d = [float(x) for x in deltas.split(",")]
            ci = seed_difference_ci(d, confidence)
            body.append(["-", "given", ", ".join(f"{x:+.3f}" for x in d), str(ci)])
        else:
            if not (a and b):
                raise click.UsageError("give --deltas, or --a and --b with --runs/--csv")
            table = api.seeds(_frame(runs, csv_path, bench), a, b, k=k, confidence=confidence,
                              estimator=estimator, select=select, seed=seed)  # fmt: skip
            for r in table.to_dict("records"):
                deltas_text = ", ".join(f"{x:+.3f}" for x in r["deltas"])
                body.append([r["benchmark"], r["method"], deltas_text, str(r["ci"])])
    if not body:
        raise click.ClickException(f"no benchmark has results for both {a!r} and {b!r}")
    _table(
        f"per-seed differences, {confidence:.0%} t interval",
        ["benchmark", "method", "deltas", "mean [CI]"],
        body,
    )


@stats.command("tokens")
@_source
@click.option("--k", default=4, show_default=True, type=click.IntRange(min=1))
@_scoring
def tokens(runs, csv_path, bench, k, estimator, select, seed) -> None:
    """Decoded planner / solver tokens per problem and pass@K per 10k decoded tokens."""
    from cppo_bench import stats as api

    with _clean_errors():
        table = api.tokens(
            _frame(runs, csv_path, bench), k=k, estimator=estimator, select=select, seed=seed
        )
    body = []
    for r in table.to_dict("records"):
        if r["tokens"] is None or r["tokens"] != r["tokens"]:  # None, or NaN in a float column
            body.append([r["benchmark"], r["method"], "-", "-", "-", f"{r['pass_at_k']:.3f}", "-"])
            continue
        eff = "-" if r["per_10k"] is None or r["per_10k"] != r["per_10k"] else f"{r['per_10k']:.3f}"
        body.append([r["benchmark"], r["method"], f"{r['planner']:.1f}", f"{r['solver']:.1f}",
                     f"{r['tokens']:.1f}", f"{r['pass_at_k']:.3f}", eff])  # fmt: skip
    cols = ["benchmark", "method", "planner", "solver", "tokens", f"pass@{k}", f"pass@{k}/10k"]
    _table("decoded tokens per problem (prompt tokens excluded)", cols, body)


# registered here, defined there (stats.py stays under the project's file size)
from cppo_bench.cli.stats_diversity import diversity  # noqa: E402

stats.add_command(diversity)
