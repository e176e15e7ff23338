"""What every `cppo-bench stats` command shares: the input options' path type, the
results frame read from --runs or --csv, and the table printer. Below both
`cli/stats.py` and `cli/stats_diversity.py`, so neither imports the other's insides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.util.termsafe import echo, markup, quote, safe

PATH = click.Path(exists=True, path_type=Path)


def _frame(runs: Path | None, csv_path: Path | None, bench: str | None) -> Any:
    """The results frame the API's statistics take (cppo_bench.stats.read, the public
    `cppo_bench.load_runs`; an outcome CSV by cppo_bench.store.frames)."""
    from cppo_bench.stats.read import load_runs
    from cppo_bench.store.frames import read_outcomes

    if (runs is None) == (csv_path is None):
        raise click.UsageError("give exactly one of --runs DIR or --csv FILE")
    if runs is not None:
        from cppo_bench.util.progress import progress_bar

        with progress_bar("reading runs") as advance:
            frame = load_runs(
                runs, warn=lambda w: echo(f"warning: {safe(w)}", err=True), progress=advance
            )
        skipped = frame.attrs.get("skipped", {})
        if skipped.get("runs") or skipped.get("records"):
            echo(f"skipped {skipped.get('runs', 0)} unreadable run(s) and "
                 f"{skipped.get('records', 0)} bad record line(s), named above; the numbers "
                 "below leave them out", err=True)  # fmt: skip
    else:
        assert csv_path is not None  # (exactly one of the two: checked above)
        frame = read_outcomes(csv_path)
    if bench is not None:
        from cppo_bench.benchmarks import BENCHMARKS

        frame = frame[frame["benchmark"] == BENCHMARKS.canonical(bench)]
        if frame.empty:
            raise click.ClickException(f"no results for benchmark {quote(bench)}")
    ctx = click.get_current_context(silent=True)
    window = (ctx.meta.get("stats_window") if ctx is not None else None) or {}
    if any(v is not None for v in window.values()):
        from cppo_bench.stats.slices import window as cut

        frame = cut(frame, **window)
        left = frame.attrs["left_out"]
        said = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in window.items() if v)
        echo(
            f"window {said}: {left['outside']} problem rows outside it, {left['undated']} "
            "without a contest date left out",
            err=True,
        )
        if frame.empty:
            raise click.ClickException(f"no results in the window ({said})")
    return frame


def _load(runs: Path | None, csv_path: Path | None, bench: str | None) -> list:
    """The frame's rows as OutcomeRows (for `stats diversity`)."""
    from cppo_bench.stats.read import rows_of

    return rows_of(_frame(runs, csv_path, bench))


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
