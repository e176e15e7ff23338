"""`cppo-bench data`: list the registered benchmarks and show their normalised problems
(cppo_bench.api.data loads and summarises; this module prints)."""

from __future__ import annotations

from typing import Any

import click

from cppo_bench.api.data import DataConfig
from cppo_bench.cli.options import bench_options, configured, parse_kv
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

    from cppo_bench.api.data import benchmarks
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    table = Table("name", escape("hub dataset [split]"), "description")
    table.columns[1].overflow = "fold"
    for bench in benchmarks():
        table.add_row(bench.name, escape(bench.hub or "(shipped)"), escape(bench.description))
    Console().print(table)


@configured(
    DataConfig,
    names={"data_path": "data"},
    parsed={"option_pairs": "loader_options"},
    view=("as_json",),
)
@data.command("show")
@bench_options
@click.option("--limit", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print one Problem JSON object per line.")
@click.option("--strict", is_flag=True)
def show(**opts: Any) -> None:
    """Print a benchmark's problems as the loaders normalise them: a summary table, or JSON
    lines of Problem records with --json."""
    from cppo_bench.api.config import build_config
    from cppo_bench.api.data import load_line
    from cppo_bench.api.data import show as load_shown
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    config = build_config(DataConfig, {
        "bench": opts["bench"],
        "data": opts["data_path"],
        "loader_options": parse_kv(opts["option_pairs"]),
        "limit": opts["limit"],
        "strict": opts["strict"],
    })  # fmt: skip
    with Console(stderr=True).status(f"loading {config.bench} from {config.data or 'the hub'}"):
        result = load_shown(config)
    if opts["as_json"]:
        for problem in result.problems:
            echo(json_line(problem.to_dict()), whole=True)
        for error in result.errors:
            echo(f"skipped: {safe(error)}", err=True)
        for note in result.notes:
            echo(f"note: {safe(note)}", err=True)
        if result.dropped or result.errors:  # a pipe stays quiet unless something was left out
            echo(safe(load_line(config.bench, result)), err=True)
        return
    Console().print(*summary_renderables(config.bench, result))


def summary_renderables(bench: str, result: Any) -> list[Any]:
    from rich.markup import escape
    from rich.table import Table

    from cppo_bench.api.data import load_line, summary_rows

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
