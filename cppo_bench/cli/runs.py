"""`cppo-bench runs`: list the stored runs, merge sharded ones. A filter that matches no
stored run is an error naming what is stored (a typo must not read as "no runs yet")."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cppo_bench.api.runs import MergeConfig, RunsConfig
from cppo_bench.cli.options import configured, runs_option
from cppo_bench.util.termsafe import echo, safe

_OUT = runs_option("--out", help="The run store to read.")  # --out: the old spelling


@configured(RunsConfig, view=("as_json",))
@click.group(invoke_without_command=True)
@_OUT
@click.option("--bench")
@click.option("--method")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
@click.pass_context
def runs(
    ctx: click.Context, runs: Path, bench: str | None, method: str | None, as_json: bool
) -> None:
    """List the stored runs under RUNS: configuration, progress and pass@K (shards of a run
    are listed as that one run); `runs merge` writes sharded runs' merged directories."""
    if ctx.invoked_subcommand is not None:
        return
    from cppo_bench.api.config import build_config
    from cppo_bench.api.runs import list_runs
    from cppo_bench.cli.run_view import print_runs

    rows = list_runs(build_config(RunsConfig, {"runs": runs, "bench": bench, "method": method}))
    if as_json:
        for row in rows:
            echo(json.dumps(row, sort_keys=True), whole=True)
    else:
        print_runs(rows, runs)


@configured(MergeConfig, view=("quiet",))
@runs.command("merge")
@_OUT
@click.option("--bench")
@click.option("--method")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--lock-wait", type=click.FloatRange(min=0))
def merge(runs: Path, bench: str | None, method: str | None, quiet: bool, lock_wait: float) -> None:
    """Merge the shards of every sharded run under RUNS into the run's own directory.

    Each run is checked first (every shard present, same manifest apart from the shard, no
    problem missing or in two shards); a run that fails is named with the reason, the others
    are still merged, and the exit status is non-zero.
    """
    from cppo_bench.api.config import build_config
    from cppo_bench.api.runs import merge_runs
    from cppo_bench.util.progress import progress_bar

    config = build_config(MergeConfig, {"runs": runs, "bench": bench, "method": method,
                                        "lock_wait": lock_wait})  # fmt: skip
    with progress_bar("merging runs", None, quiet) as advance:
        done = merge_runs(config, advance=advance)
    if not done.merged and not done.failed:
        echo(f"no sharded runs under {safe(runs)}")
    for path, shards, added in done.merged:
        echo(f"merged {shards} shards into {safe(path)} ({added} records added)")
    for line in done.failed:
        echo(f"Error: {safe(line)}", err=True)
    if done.failed:
        raise SystemExit(1)
