"""`cppo-bench run` (generate, verify and store K attempts per problem) and `cppo-bench runs`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from cppo_bench.cli.options import (
    backend_factory,
    bench_options,
    default_model_label,
    open_backend,
    parse_kv,
)
from cppo_bench.problem import DataError
from cppo_bench.registry import UnknownNameError
from cppo_bench.termsafe import safe

# flag -> method option it sets (only the methods that have the option accept it)
METHOD_FLAGS = ("inference", "select", "strategies", "fill")


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise click.BadParameter(f"{text!r}: give distinct seeds, e.g. 0,1,2")
    return seeds


def checkpoint_tags(opts: dict[str, Any]) -> dict[str, Any]:
    """Manifest tags that let `cppo-bench report` place a trained checkpoint's run."""
    if opts["trained"] is None:
        if opts["base_model"] is not None or opts["train_seed"] is not None:
            raise click.UsageError("--base-model and --train-seed go with --trained")
        return {}
    tags: dict[str, Any] = {"trained": opts["trained"]}
    if opts["base_model"] is not None:
        tags["base_model"] = opts["base_model"]
    if opts["train_seed"] is not None:
        tags["train_seed"] = opts["train_seed"]
    return tags


_LOCK_WAIT = click.option(
    "--lock-wait",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds to wait for a run another process holds (else stop at once, naming it).",
)


@click.command()
@click.option("--method", required=True, help="direct, plan_and_solve, plansearch, cppo, ...")
@bench_options
@click.option("--model", default=None, help="Model id or path (default: the backend's default).")
@click.option("--backend", default="hf", show_default=True, help="hf, vllm, openai or mod:factory.")
@click.option(
    "-k",
    "--k",
    "k",
    default=4,
    show_default=True,
    type=click.IntRange(1),
    help="Attempts per problem: the pass@K budget.",
)
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=None,
    help="First N problems only; a larger N later extends the same run.",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Only shard I (0-based) of N of the problems, e.g. $SLURM_ARRAY_TASK_ID/8; "
    "merge with `cppo-bench runs merge`.",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated; one run each.")
@click.option("--temperature", default=0.7, show_default=True, type=float)
@click.option("--top-p", default=0.95, show_default=True, type=float)
@click.option("--max-tokens", default=2048, show_default=True, type=click.IntRange(1))
@click.option(
    "--out",
    default="runs",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Root of the run store.",
)
@click.option("--inference", type=click.Choice(["joint", "iid"]), help="cppo: planner draws.")
@click.option(
    "--select",
    type=click.Choice(["first", "last", "random"]),
    help="cppo: which plans of a tuple when K is not a multiple of 4.",
)
@click.option("--strategies", help="fixed_strategy: ';'-separated hints, or @FILE (one a line).")
@click.option("--fill", type=click.Choice(["cycle", "generic"]), help="cppo: short-tuple rule.")
@click.option(
    "-m",
    "--method-option",
    multiple=True,
    metavar="KEY=VAL",
    help="Any method option, e.g. -m planner_max_tokens=512 -m n_skills=4.",
)
@click.option("--base-url", default=None, help="openai backend: server URL.")
@click.option("--batch-size", type=click.IntRange(1), default=None, help="Backend batch size.")
@click.option(
    "-b",
    "--backend-option",
    multiple=True,
    metavar="KEY=VAL",
    help="Backend option, e.g. -b device=cpu -b dtype=float32.",
)
@click.option(
    "--chunk-size",
    default=16,
    show_default=True,
    type=click.IntRange(1),
    help="Problems per batch; a killed run loses at most one chunk.",
)
@click.option("--workers", type=click.IntRange(1), default=None, help="Verifier processes.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_LOCK_WAIT
@click.option(
    "--trained", default=None, help="Tag of the trained checkpoint in --model (cppo, pkpo, ...)."
)
@click.option("--base-model", default=None, help="Model the checkpoint was trained from.")
@click.option("--train-seed", type=int, default=None, help="Training seed of the checkpoint.")
def run(**opts: Any) -> None:
    """Generate K attempts per problem with METHOD, verify them, store a resumable run.

    Run the same command again to resume: finished problems are skipped and finished
    generations are served from the run's generation cache.
    """
    from cppo_bench.backends.base import ModelLoadError, SamplingParams
    from cppo_bench.cli.run_view import RichReporter, print_seed_table, print_summary
    from cppo_bench.methods import OptionError
    from cppo_bench.pipeline import RunSpec, execute, load_problems
    from cppo_bench.runstore import parse_shard
    from cppo_bench.verifier import SandboxError

    seeds = parse_seeds(opts["seeds"])
    try:
        shard = None if opts["shard"] is None else parse_shard(opts["shard"])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--shard") from None
    try:  # before any progress output: an unknown method is a one-line error, nothing else
        from cppo_bench.methods import METHODS

        METHODS.get(opts["method"])
    except UnknownNameError as exc:
        raise click.ClickException(str(exc)) from None
    method_options = {f: opts[f] for f in METHOD_FLAGS if opts[f] is not None}
    method_options.update(parse_kv(opts["method_option"], "-m/--method-option"))
    backend_options = parse_kv(opts["backend_option"], "-b/--backend-option")
    for name in ("base_url", "batch_size"):
        if opts[name] is not None:
            backend_options[name] = opts[name]
    try:
        # the whole dataset: it identifies the run; --limit and --shard select from it
        loaded = load_problems(
            opts["bench"], opts["data_path"], None, parse_kv(opts["option_pairs"])
        )
        label = opts["model"] or default_model_label(
            opts["backend"], backend_factory(opts["backend"])
        )
        sampling = SamplingParams(
            temperature=opts["temperature"], top_p=opts["top_p"], max_tokens=opts["max_tokens"]
        )
        results = []
        with open_backend(opts["backend"], opts["model"], backend_options) as backend:
            for seed in seeds:
                spec = RunSpec(
                    method=opts["method"],
                    bench=opts["bench"],
                    model=label,
                    backend=opts["backend"],
                    k=opts["k"],
                    seed=seed,
                    sampling=sampling,
                    method_options=method_options,
                    chunk_size=opts["chunk_size"],
                    verify_workers=opts["workers"],
                    tags=checkpoint_tags(opts),
                    limit=opts["limit"],
                    shard=shard,
                )
                title = f"{opts['method']} seed {seed}" + (
                    f" shard {opts['shard']}" if shard else ""
                )
                with RichReporter(title, opts["k"], opts["quiet"]) as rep:
                    result = execute(
                        spec,
                        loaded.problems,
                        backend,
                        opts["out"],
                        data_source=loaded.source or opts["bench"],
                        reporter=rep,
                        lock_wait=opts["lock_wait"],
                    )
                print_summary(result, skipped=len(loaded.errors))
                results.append(result)
    except (DataError, OptionError, UnknownNameError, ModelLoadError, SandboxError) as exc:
        raise click.ClickException(str(exc)) from None
    except TypeError as exc:  # a backend factory refusing an option
        if "argument" not in str(exc):
            raise
        raise click.ClickException(f"backend {opts['backend']!r}: {exc}") from None
    if len(results) > 1:
        print_seed_table(results)


_OUT = click.option("--out", default="runs", show_default=True, type=click.Path(path_type=Path))


@click.group(invoke_without_command=True)
@_OUT
@click.option("--bench", default=None, help="Only this benchmark.")
@click.option("--method", default=None, help="Only this method.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
@click.pass_context
def runs(
    ctx: click.Context, out: Path, bench: str | None, method: str | None, as_json: bool
) -> None:
    """List the stored runs under OUT: configuration, progress and pass@K (shards of a run
    are listed as that one run); `runs merge` writes sharded runs' merged directories."""
    if ctx.invoked_subcommand is not None:
        return
    from cppo_bench.cli.run_view import print_runs, run_rows

    try:
        rows = run_rows(out, bench=bench, method=method)
    except DataError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, sort_keys=True))
    else:
        print_runs(rows, out)


@runs.command("merge")
@_OUT
@click.option("--bench", default=None, help="Only this benchmark.")
@click.option("--method", default=None, help="Only this method.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_LOCK_WAIT
def merge(out: Path, bench: str | None, method: str | None, quiet: bool, lock_wait: float) -> None:
    """Merge the shards of every sharded run under OUT into the run's own directory.

    Each run is checked first (every shard present, same manifest apart from the shard, no
    problem missing or in two shards); a run that fails is named with the reason, the others
    are still merged, and the exit status is non-zero.
    """
    from cppo_bench.progress import progress_bar
    from cppo_bench.runindex import scan
    from cppo_bench.runmerge import merge_run

    store = scan(out)
    todo = [
        r
        for r in store.runs
        if r.shards
        and (bench is None or r.manifest.bench == bench)
        and (method is None or r.manifest.method == method)
    ]
    if not todo:
        click.echo(f"no sharded runs under {out}")
        return
    failed = []
    with progress_bar("merging runs", len(todo), quiet) as advance:
        for run in todo:
            try:
                added = merge_run(run, out, lock_wait)
            except DataError as exc:
                failed.append(str(exc))
            else:
                click.echo(
                    f"merged {len(run.shards)} shards into {safe(run.path)} ({added} records added)"
                )
            advance(1)
    for line in failed:
        click.echo(f"Error: {safe(line)}", err=True)
    if failed:
        raise SystemExit(1)
