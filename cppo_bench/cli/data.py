"""`cppo-bench data`: list the registered benchmarks and show their normalised problems."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from typing import Any

import click

from cppo_bench.cli.options import bench_options, parse_kv
from cppo_bench.problem import LoadResult, Problem
from cppo_bench.util.termsafe import echo, json_line, safe

MAX_ERRORS_SHOWN = 20


@click.group("data")
def data() -> None:
    """Inspect benchmark data."""


@data.command("list")
def list_benchmarks() -> None:
    """List the registered benchmarks."""
    from rich.markup import escape
    from rich.table import Table

    from cppo_bench.benchmarks import BENCHMARKS
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    table = Table("name", escape("hub dataset [split]"), "description")
    table.columns[1].overflow = "fold"
    for name in BENCHMARKS.names():
        spec = BENCHMARKS.get(name)
        hub = f"{spec.hub_id} [{spec.default_split}]" if spec.hub_id else "(shipped)"
        table.add_row(name, escape(hub), escape(spec.description))
    Console().print(table)


@data.command("show")
@bench_options
@click.option("--limit", type=click.IntRange(min=1), help="Show only the first N problems.")
@click.option("--json", "as_json", is_flag=True, help="Print one Problem JSON object per line.")
@click.option("--strict", is_flag=True, help="Stop at the first malformed record.")
def show(
    bench: str,
    data_path: str | None,
    limit: int | None,
    as_json: bool,
    strict: bool,
    option_pairs: tuple[str, ...],
) -> None:
    """Print a benchmark's problems as the loaders normalise them: a summary table, or JSON
    lines of Problem records with --json."""
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.benchmarks.loadreport import load_line
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    options = parse_kv(option_pairs)
    err = Console(stderr=True)
    with err.status(f"loading {bench} from {data_path or 'the hub'}"):
        result = load_result(bench, data_path, limit=limit, strict=strict, unique=False, **options)
    if as_json:
        for problem in result.problems:
            echo(json_line(problem.to_dict()), whole=True)
        for error in result.errors:
            echo(f"skipped: {safe(error)}", err=True)
        for note in result.notes:
            echo(f"note: {safe(note)}", err=True)
        if result.dropped or result.errors:  # a pipe stays quiet unless something was left out
            echo(safe(load_line(bench, result)), err=True)
        return
    Console().print(*summary_renderables(bench, result))


def _spread(values: list[int]) -> str:
    if not values:
        return "-"
    return f"{min(values)} / {statistics.median(values):g} / {max(values)}"


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: -kv[1])) or "-"


def summary_rows(problems: list[Problem]) -> list[tuple[str, str]]:
    """(label, value) rows describing a list of problems."""
    n_tests = [len(p.tests) for p in problems]
    modes = Counter("+".join(sorted(p.modes)) or "none" for p in problems)
    kinds = Counter(t.kind for p in problems for t in p.tests)
    limits = [p.time_limit_s for p in problems if p.time_limit_s]
    fn_names = {p.fn_name for p in problems if p.fn_name}
    rows = [
        ("problems", str(len(problems))),
        ("tests per problem (min / median / max)", _spread(n_tests)),
        ("tests", f"{sum(n_tests)} ({_counts(kinds)})"),
        ("problems by test mode", _counts(modes)),
        # fewer than the call problems when several problems share a function name
        ("distinct function names (call mode)", str(len(fn_names))),
        ("checkers", _counts(Counter(p.checker for p in problems))),
        ("tasks", _counts(Counter(p.task for p in problems))),
        ("difficulty", _counts(Counter(p.difficulty or "-" for p in problems))),
        ("with reference solutions", str(sum(bool(p.reference_solutions) for p in problems))),
        ("time limit s (min / max)", f"{min(limits):g} / {max(limits):g}" if limits else "-"),
    ]
    selections = {json.dumps(p.metadata.get("selection"), sort_keys=True) for p in problems}
    if selections - {"null"}:
        rows.append(("selection", "; ".join(sorted(selections - {"null"}))))
    return rows


def summary_renderables(bench: str, result: LoadResult) -> list[Any]:
    from rich.markup import escape
    from rich.table import Table

    from cppo_bench.benchmarks.loadreport import load_line

    table = Table(title=escape(f"{bench}: {result.source}"), show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for label, value in summary_rows(result.problems):
        table.add_row(label, escape(value))
    table.add_row("skipped records", str(len(result.errors)))
    table.add_row("records", escape(load_line(bench, result)))
    for note in result.notes:
        table.add_row("note", escape(note))
    out: list[Any] = [table]
    if result.errors:
        skipped = Table("source", "record", "reason", title="skipped records")
        for error in result.errors[:MAX_ERRORS_SHOWN]:
            skipped.add_row(*map(escape, (error.source, error.record_id, error.reason)))
        out.append(skipped)
        if len(result.errors) > MAX_ERRORS_SHOWN:
            out.append(f"... and {len(result.errors) - MAX_ERRORS_SHOWN} more")
    return out
