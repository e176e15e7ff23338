"""`cppo-bench run` (generate, verify and store K attempts per problem) and `cppo-bench runs`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from cppo_bench.api.run import RunConfig
from cppo_bench.cli.options import bench_options, configured, parse_kv, runs_option
from cppo_bench.cli.run_like import METHOD_FLAGS
from cppo_bench.cli.testsets import tests_option
from cppo_bench.util.termsafe import echo, quote


def say_what_was_loaded(bench: str, loaded: Any, limit: int | None) -> None:
    """Read / kept / dropped-and-why (stderr), and how many of the kept ones --limit uses."""
    from cppo_bench.api.data import load_line

    echo(load_line(bench, loaded), err=True)
    n = len(loaded.problems)
    if limit is not None and limit < n:
        echo(f"--limit {limit}: the first {limit} of these {n} problems (a partial run)", err=True)


def resume_command() -> str:
    """The command line that resumes this run: the same command (finished problems are
    skipped, finished generations come from the run's cache)."""
    import shlex
    import sys

    args = sys.argv[1:]
    if not args or args[0] != "run":  # not started from a shell (e.g. in-process)
        return "the same `cppo-bench run` command"
    return "cppo-bench " + shlex.join(args)


def strict_plans(method: str, method_options: dict[str, Any]) -> None:
    """--strict-plans: no fill rule; an invalid tuple's branches count as failed."""
    from cppo_bench.api.names import method_takes

    if not method_takes(method, "fill"):
        raise click.UsageError(
            f"--strict-plans: method {quote(method)} has no plan tuples to be strict about "
            "(it applies to cppo)"
        )
    if method_options.get("fill") not in (None, "fail"):
        raise click.UsageError(f"--strict-plans contradicts --fill {method_options['fill']}")
    method_options["fill"] = "fail"


def backend_as_model(opts: dict[str, Any]) -> None:
    """`--model hf` (a backend name given as the model, as lm-eval's `--model hf` reads) is
    the backend, with its default model: recognised here instead of asking the hub for a
    model called 'hf' (which retries for a minute before failing)."""
    from cppo_bench.api.names import registry

    model = opts["model"]
    if model is None or model not in registry("backend").names() or Path(model).exists():
        return
    source = click.get_current_context().get_parameter_source("backend")
    if source is not None and source.name != "DEFAULT" and opts["backend"] != model:
        raise click.UsageError(
            f"--model {quote(model)} is a backend name, not a model, and --backend is "
            f"{quote(opts['backend'])}: give the model id or path in --model"
        )
    echo(
        f"note: --model {model} is a backend name; using --backend {model} with its default model",
        err=True,
    )
    opts["backend"], opts["model"] = model, None


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


@contextmanager
def acknowledged_interrupts() -> Iterator[None]:
    """Ctrl-C says at once that it was heard (a run waiting on a server looked hung for the
    ~40 s its requests took): the handler prints one line, then raises KeyboardInterrupt, which
    abandons the requests in flight and keeps what is stored (print_interrupted says what)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def heard(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C: at once
        echo("interrupt received: stopping (requests in flight are abandoned)", err=True)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, heard)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


_LOCK_WAIT = click.option("--lock-wait", type=click.FloatRange(min=0))


def _method_help() -> str:
    from cppo_bench.api.names import listing

    return "One of: " + listing("method") + "."


# parameter -> the field it is parsed into
_PARSED = {
    **dict.fromkeys((*METHOD_FLAGS, "strict_plans", "method_option"), "method_options"),
    **dict.fromkeys(("backend_option", "base_url", "batch_size"), "backend_options"),
    **dict.fromkeys(("trained", "base_model", "train_seed"), "tags"),
    "option_pairs": "loader_options",
    "seeds": "seeds",
    "like": "",  # every field a stored run recorded
}


@configured(RunConfig, names={"data_path": "data", "tests_dir": "tests"}, parsed=_PARSED,
            view=("quiet",))  # fmt: skip
@click.command()
@click.option("--method", default=None, help=_method_help())
@bench_options(required=False)
@click.option(
    "--like",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    metavar="RUN_DIR",
    help="Make the run in RUN_DIR again from its manifest (method, data, loader options, "
    "model, sampling and the rest); options given here override; default --runs: RUN_DIR's "
    "store.",
)
@tests_option
@click.option("--model")
@click.option("--backend")
@click.option(
    "-k",
    "--k",
    "--n",  # lm-eval / LiveCodeBench spelling
    "k",
    type=click.IntRange(1),
)
@click.option(
    "--limit",
    type=click.IntRange(1),
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Only shard I (0-based) of N of the problems, e.g. $SLURM_ARRAY_TASK_ID/8; "
    "merge with `cppo-bench runs merge`.",
)
@click.option("--seeds", default="0", show_default=True, help="Comma-separated; one run each.")
@click.option("--temperature", type=float)
@click.option("--top-p", "--top_p", "top_p", type=float)
@click.option(
    "--max-tokens",
    "--max_tokens",
    "max_tokens",
    type=click.IntRange(1),
)
@runs_option(
    "--out", "--output_path", help="The run store the run is written to."
)  # old; lm-eval's
@click.option("--inference", type=click.Choice(["joint", "iid"]), help="cppo: planner draws.")
@click.option(
    "--select",
    type=click.Choice(["first", "last", "random"]),
    help="cppo: which plans of a tuple when K is not a multiple of 4.",
)
@click.option("--strategies", help="fixed_strategy: ';'-separated hints, or @FILE (one a line).")
@click.option("--fill", type=click.Choice(["cycle", "generic"]), help="cppo: short-tuple rule.")
@click.option(
    "--strict-plans",
    is_flag=True,
    help="cppo: a tuple that breaks the PLAN contract scores its branches as failed "
    "instead of being filled (sets -m fill=fail).",
)
@click.option(
    "-m",
    "--method-option",
    multiple=True,
    metavar="KEY=VAL",
    help="Any option of the method, e.g. -m planner_max_tokens=512 (cppo), -m n_skills=4 (skills).",
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
    type=click.IntRange(1),
)
@click.option("--workers", type=click.IntRange(1))
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--new-run",
    is_flag=True,
    help="Start this run even though an incomplete run of the same method, bench, model, K "
    "and seed with other settings is stored (without it, that stops with the field named).",
)
@_LOCK_WAIT
@click.option(
    "--trained",
    default=None,
    help="Tag of the trained checkpoint in --model: the training algorithm (cppo, pkpo, "
    "passk_rl, upskill).",
)
@click.option("--base-model", default=None, help="Model the checkpoint was trained from.")
@click.option("--train-seed", type=int, default=None, help="Training seed of the checkpoint.")
def run(**opts: Any) -> None:
    """Generate K attempts per problem with METHOD, verify them, store a resumable run.

    Run the same command again to resume: finished problems are skipped and finished
    generations are served from the run's generation cache.
    """
    from cppo_bench.api import run as run_api
    from cppo_bench.api.config import build_config
    from cppo_bench.cli.run_view import (
        RichReporter,
        print_interrupted,
        print_seed_table,
        print_summary,
    )

    if opts["like"] is not None:
        from cppo_bench.cli.run_like import apply_like

        apply_like(opts, click.get_current_context())
    for flag, name in (("--method", "method"), ("--bench", "bench")):
        if opts[name] is None:  # required, unless --like gives it
            raise click.MissingParameter(param_hint=f"'{flag}'", param_type="option")
    method_options = {f: opts[f] for f in METHOD_FLAGS if opts[f] is not None}
    method_options.update(parse_kv(opts["method_option"], "-m/--method-option"))
    if opts["strict_plans"]:
        strict_plans(opts["method"], method_options)
    backend_as_model(opts)
    backend_options = parse_kv(opts["backend_option"], "-b/--backend-option")
    for name in ("base_url", "batch_size"):
        if opts[name] is not None:
            backend_options[name] = opts[name]
    settings = {field: opts[field] for field in RunConfig.__dataclass_fields__ if field in opts}
    config = build_config(RunConfig, {
        **settings,
        "data": opts["data_path"],
        "tests": opts["tests_dir"],
        "method_options": method_options,
        "backend_options": backend_options,
        "loader_options": parse_kv(opts["option_pairs"]),
        "tags": checkpoint_tags(opts),
    })  # fmt: skip
    skipped: list[int] = [0]

    def loaded(result: Any) -> None:
        skipped[0] = len(result.errors)
        say_what_was_loaded(config.bench, result, config.limit)

    @contextmanager
    def session(seed: int) -> Any:
        title = f"{config.method} seed {seed}" + (f" shard {opts['shard']}" if config.shard else "")
        with RichReporter(title, config.k, opts["quiet"]) as rep:
            try:
                yield rep
            except KeyboardInterrupt:
                rep.__exit__(None, None, None)  # the bar off the screen first
                print_interrupted(rep.run_dir, rep.total, resume_command())
                raise

    with acknowledged_interrupts():
        done = run_api(
            config,
            session=session,
            on_loaded=loaded,
            on_result=lambda result: print_summary(result, skipped=skipped[0]),
            on_note=lambda line: echo(line, err=True),
        )
    if len(done.results) > 1:
        print_seed_table(list(done.results))


from cppo_bench.cli.runs import runs  # noqa: E402,F401  (`runs` lived here; kept importable)
