"""`cppo-bench runs`: list the stored runs, merge sharded ones. A filter that matches no
stored run is an error naming what is stored (a typo must not read as "no runs yet")."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cppo_bench.cli.options import runs_option
from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import echo, quote, safe


def registered_names(what: str) -> list[str]:
    if what == "method":
        from cppo_bench.methods import METHODS

        return METHODS.names()
    from cppo_bench.benchmarks import BENCHMARKS

    return BENCHMARKS.names()


def unmatched_filter(out: Path, bench: str | None, method: str | None) -> None:
    """A --bench / --method that matches no stored run is an error naming what exists (a
    typo such as `--method dirct` must not read as "no runs yet")."""
    from cppo_bench.store.index import scan

    runs_ = scan(out).runs
    parts = []
    for flag, value, attr in (("--bench", bench, "bench"), ("--method", method, "method")):
        if value is None:
            continue
        stored = sorted({getattr(r.manifest, attr) for r in runs_})
        if value not in stored:
            known = registered_names(attr)
            hint = "" if value in known else f" (not a known {attr}: {', '.join(known)})"
            parts.append(
                f"{flag} {quote(value)} matches no stored run{hint}; stored: "
                f"{', '.join(stored) or 'none'}"
            )
    if not parts:
        parts.append(f"no stored run has both --bench {quote(bench)} and --method {quote(method)}")
    raise click.ClickException(f"under {out}: " + "; ".join(parts))


_OUT = runs_option("--out", help="The run store to read.")  # --out: the old spelling


@click.group(invoke_without_command=True)
@_OUT
@click.option("--bench", default=None, help="Only this benchmark.")
@click.option("--method", default=None, help="Only this method.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
@click.pass_context
def runs(
    ctx: click.Context, runs: Path, bench: str | None, method: str | None, as_json: bool
) -> None:
    """List the stored runs under RUNS: configuration, progress and pass@K (shards of a run
    are listed as that one run); `runs merge` writes sharded runs' merged directories."""
    if ctx.invoked_subcommand is not None:
        return
    from cppo_bench.cli.run_view import print_runs, run_rows

    rows = run_rows(runs, bench=bench, method=method)
    if (bench or method) and not any("bench" in r for r in rows):
        unmatched_filter(runs, bench, method)
    if as_json:
        for row in rows:
            echo(json.dumps(row, sort_keys=True), whole=True)
    else:
        print_runs(rows, runs)


@runs.command("merge")
@_OUT
@click.option("--bench", default=None, help="Only this benchmark.")
@click.option("--method", default=None, help="Only this method.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--lock-wait",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds to wait for a run another process holds (else stop at once, naming it).",
)
def merge(runs: Path, bench: str | None, method: str | None, quiet: bool, lock_wait: float) -> None:
    """Merge the shards of every sharded run under RUNS into the run's own directory.

    Each run is checked first (every shard present, same manifest apart from the shard, no
    problem missing or in two shards); a run that fails is named with the reason, the others
    are still merged, and the exit status is non-zero.
    """
    from cppo_bench.store.index import scan
    from cppo_bench.store.merge import merge_run
    from cppo_bench.util.progress import progress_bar

    store = scan(runs)
    todo = [
        r
        for r in store.runs
        if r.shards
        and (bench is None or r.manifest.bench == bench)
        and (method is None or r.manifest.method == method)
    ]
    if not todo and (bench or method):
        unmatched_filter(runs, bench, method)
    if not todo:
        echo(f"no sharded runs under {runs}")
        return
    failed = []
    with progress_bar("merging runs", len(todo), quiet) as advance:
        for run in todo:
            try:
                added = merge_run(run, runs, lock_wait)
            except DataError as exc:
                failed.append(str(exc))
            else:
                echo(
                    f"merged {len(run.shards)} shards into {safe(run.path)} ({added} records added)"
                )
            advance(1)
    for line in failed:
        echo(f"Error: {safe(line)}", err=True)
    if failed:
        raise SystemExit(1)
