"""What every `cppo-bench stats` command shares: the options of the results it reads (one
`StatsConfig`, cppo_bench.api.stats), the one API call with its notes and progress, and the
table printer. Below both `cli/stats.py` and `cli/stats_diversity.py`, so neither imports the
other's insides."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from cppo_bench.util.termsafe import echo, markup

F = TypeVar("F", bound=Callable[..., Any])
PATH = click.Path(exists=True, path_type=Path)
# parameter -> field ("": prints only); the window's dates are not called start_date/end_date
# here: those parameter names are bench_options' loader flags, which `configured` takes as
# folded into -o pairs
NAMES = {"csv_path": "csv", "from_date": "start_date", "to_date": "end_date", "as_json": ""}


def source_options(fn: F) -> F:
    """--runs / --csv / --bench and LiveCodeBench's window flags: the fields of StatsConfig
    (their help and defaults come from it, `configured`)."""
    for option in reversed([
        click.option("--bench"),
        click.option("--runs", type=PATH),
        click.option("--csv", "csv_path", type=PATH),
        click.option("--start-date", "--start_date", "from_date", metavar="YYYY-MM-DD"),
        click.option("--end-date", "--end_date", "to_date", metavar="YYYY-MM-DD"),
        click.option("--platform"),
    ]):  # fmt: skip
        fn = option(fn)
    return fn


def scoring_options(fn: F) -> F:
    """--estimator / --select / --seed: the fields of ScoredConfig."""
    fn = click.option("--estimator", type=click.Choice(["auto", "first", "unbiased"]))(fn)
    fn = click.option("--select", type=click.Choice(["first", "last", "random"]))(fn)
    return click.option("--seed", type=int)(fn)


def settings(opts: Mapping[str, Any], names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The command's parameters as config settings (renamed; those that only print dropped)."""
    rename = {**NAMES, **(names or {})}
    return {rename.get(k, k): v for k, v in opts.items() if rename.get(k, k)}


def call(api: Callable[..., Any], config: Any, label: str = "reading runs") -> Any:
    """One API call, its notes (what was left out, the window) on stderr, its progress (runs
    read, tuples judged) as a bar."""
    from cppo_bench.util.progress import progress_bar

    with progress_bar(label) as advance:
        return api(config, on_note=lambda line: echo(line, err=True), progress=advance)


def table(title: str, columns: list[str], body: list[list[str]]) -> None:
    from rich.table import Table

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    out = Table(title=title)
    for c in columns:
        out.add_column(c, justify="left" if c in ("benchmark", "method") else "right")
    for line in body:
        out.add_row(*map(markup, line))  # cells hold names from the run store
    console = Console()
    if not console.is_terminal:  # piped or logged: never fold a labelled number
        console = Console(width=100_000)
    console.print(out)
