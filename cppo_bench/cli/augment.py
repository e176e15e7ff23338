"""`cppo-bench augment`: stronger tests for a benchmark (see docs/augment.md). Builds one
AugmentConfig (cppo_bench.api.augment) and prints the tally `augment` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.api.augment import AugmentConfig
from cppo_bench.api.config import build_config
from cppo_bench.cli.options import bench_options, configured, parse_kv
from cppo_bench.util.termsafe import echo, safe


@configured(AugmentConfig, names={"data_path": "data"}, parsed={"option_pairs": "loader_options"},
            view=("quiet",))  # fmt: skip
@click.command("augment")
@bench_options
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--per-problem", type=click.IntRange(1, 1000))
@click.option("--seed", type=int)
@click.option("--oracle", type=click.Choice(["references", "model"]))
@click.option("--references", type=click.IntRange(2, 20))
@click.option("--generator-model")
@click.option("--generator-backend")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True))
@click.option("--limit", type=click.IntRange(1))
@click.option("--workers", type=click.IntRange(1))
@click.option("--quiet", is_flag=True, help="No progress bar.")
def augment(data_path: str | None, option_pairs: tuple[str, ...], quiet: bool,
            **opts: Any) -> None:  # fmt: skip
    """Add tests to every problem: mutated inputs whose outputs the references agree on."""
    from cppo_bench.api.augment import augment as augment_api
    from cppo_bench.util.progress import progress_bar

    config = build_config(AugmentConfig, {**opts, "data": data_path,
                                          "loader_options": parse_kv(option_pairs)})  # fmt: skip
    done = augment_api(config, progress=lambda total, finished: progress_bar(
        "augmenting", total, quiet, finished))  # fmt: skip
    print_summary(done)


def print_summary(done: Any) -> None:
    mean, low, high = done.per_problem
    marked = " (model-written references)" if done.model_references else ""
    echo(f"test set {safe(done.test_set.path)}{marked}: {done.problems} problems, "
         f"{done.augmented} augmented with {done.tests_added} tests "
         f"(mean {mean:.1f}, min {low}, max {high} per augmented problem), {done.skipped} "
         f"skipped, {done.none_kept} with no candidate kept; {done.done_now} done now in "
         f"{done.seconds:.1f} s; hash {done.test_set.hash()[:12]}")  # fmt: skip
    for reason, n in done.skip_reasons:
        echo(f"  skipped {n}: {safe(reason)}")
    if done.no_references:
        echo("  no problem had two references to agree: a benchmark that ships none "
             "(LiveCodeBench) needs --oracle model --generator-model MODEL")  # fmt: skip
