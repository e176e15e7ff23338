"""`cppo-bench augment`: stronger tests for a benchmark (see docs/augment.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import click

from cppo_bench.api.names import open_backend
from cppo_bench.cli.options import bench_options, parse_kv
from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import echo, safe


def model_references(problems: list, backend_name: str, model: str | None, n: int, seed: int):
    """The problems with `n` reference programs written by a model (the `direct` method
    through any backend) in place of the dataset's: the `--oracle model` references."""
    from dataclasses import replace

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.methods import METHODS

    method = METHODS.get("direct").from_options({})
    with open_backend(backend_name, model, {}) as backend:
        outputs = method.run(problems, backend, k=n, seed=seed, sampling=SamplingParams())
    by_id = {o.problem_id: o for o in outputs}
    return [
        replace(p, reference_solutions=tuple(a.completion for a in by_id[p.problem_id].attempts))
        for p in problems
    ]


@click.command("augment")
@bench_options
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the test set (made, or resumed when it holds this set).")  # fmt: skip
@click.option("--per-problem", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="New tests wanted per problem.")  # fmt: skip
@click.option("--seed", default=0, show_default=True, type=int, help="Mutation seed.")
@click.option("--oracle", type=click.Choice(["references", "model"]), default="references",
              show_default=True, help="Whose outputs make the expected ones: the dataset's "
              "reference solutions, or ones a model writes (--generator-model; for "
              "benchmarks without references, e.g. LiveCodeBench).")  # fmt: skip
@click.option("--references", default=3, show_default=True, type=click.IntRange(2, 20),
              help="Distinct references run as the oracle (two at least must agree).")  # fmt: skip
@click.option("--generator-model", default=None, help="--oracle model: the model.")
@click.option("--generator-backend", default="hf", show_default=True,
              help="--oracle model: its backend (name or package.module:factory).")  # fmt: skip
@click.option("--time-limit", default=2.0, show_default=True,
              type=click.FloatRange(min=0, min_open=True),
              help="CPU seconds per reference run on problems without their own limit: a "
              "reference that needs more is taken as an input outside the constraints.")  # fmt: skip
@click.option("--limit", type=click.IntRange(1), default=None, help="First N problems only.")
@click.option("--workers", type=click.IntRange(1), default=None, help="Parallel sandboxes [cores].")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def augment(bench: str, data_path: str | None, option_pairs: tuple[str, ...], out: Path,
            per_problem: int, seed: int, oracle: str, references: int,
            generator_model: str | None, generator_backend: str, time_limit: float,
            limit: int | None,
            workers: int | None, quiet: bool) -> None:  # fmt: skip
    """Add tests to every problem: mutated inputs whose outputs the references agree on."""
    import os
    import time

    from cppo_bench.augment.generate import Settings, augment_problem
    from cppo_bench.augment.mutate_call import mutator_name
    from cppo_bench.augment.store import append, open_test_set
    from cppo_bench.runner.pipeline import load_problems
    from cppo_bench.store.runs import ids_hash
    from cppo_bench.util.progress import progress_bar
    from cppo_bench.util.registry import UnknownNameError
    from cppo_bench.verifier import Limits

    if oracle == "model" and not generator_model:
        raise click.UsageError("--oracle model needs --generator-model")
    loaded = load_problems(bench, data_path, limit, parse_kv(option_pairs))
    problems = [p for p in loaded.problems if p.task == "codegen"]
    config: dict[str, Any] = {
        "bench": bench,
        "data_source": loaded.source or bench,
        "dataset_hash": ids_hash([p.problem_id for p in problems]),
        "per_problem": per_problem,
        "seed": seed,
        "oracle": oracle,
        "references": references,
        "generator_model": generator_model if oracle == "model" else None,
        "mutator": mutator_name(),
        "time_limit_s": time_limit,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    ts = open_test_set(out, config)
    todo = [p for p in problems if p.problem_id not in ts.records]
    if oracle == "model" and todo:
        from cppo_bench.backends.base import ModelLoadError

        try:
            todo = model_references(todo, generator_backend, generator_model, references, seed)
        except (ModelLoadError, UnknownNameError) as exc:
            raise DataError(f"--generator-model: {exc}") from None
    settings = Settings(per_problem, seed, references, workers or os.cpu_count() or 1,
                        Limits(time_s=time_limit), oracle)  # fmt: skip
    t0 = time.perf_counter()
    with progress_bar("augmenting", len(problems), quiet, len(problems) - len(todo)) as bar:
        for p in todo:
            append(ts, augment_problem(p, settings))
            bar(1)
    print_summary(ts, time.perf_counter() - t0, len(todo))


def print_summary(ts: Any, seconds: float, new: int) -> None:
    from collections import Counter

    recs = list(ts.records.values())
    status = Counter(r.get("status") for r in recs)
    added = [len(r.get("tests", [])) for r in recs if r.get("status") == "augmented"]
    mean = sum(added) / len(added) if added else 0.0
    marked = " (model-written references)" if ts.config.get("oracle") == "model" else ""
    echo(f"test set {safe(ts.path)}{marked}: {len(recs)} problems, "
               f"{status.get('augmented', 0)} augmented with {sum(added)} tests "
               f"(mean {mean:.1f}, min {min(added, default=0)}, max {max(added, default=0)} "
               f"per augmented problem), {status.get('skipped', 0)} skipped, "
               f"{status.get('none_kept', 0)} with no candidate kept; "
               f"{new} done now in {seconds:.1f} s; hash {ts.hash()[:12]}")  # fmt: skip
    reasons = Counter(r.get("reason") for r in recs if r.get("status") == "skipped")
    for reason, n in reasons.most_common(5):
        echo(f"  skipped {n}: {safe(reason)}")
    if recs and not added and ts.config.get("oracle") == "references":
        echo("  no problem had two references to agree: a benchmark that ships none "
                   "(LiveCodeBench) needs --oracle model --generator-model MODEL")  # fmt: skip
