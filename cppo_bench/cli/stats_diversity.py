"""`cppo-bench stats diversity`: mean diversity of each run's K-tuples."""

from __future__ import annotations

from typing import Any

import click

from cppo_bench.api.config import build_config
from cppo_bench.api.diversity import DiversityConfig
from cppo_bench.cli.options import configured
from cppo_bench.cli.stats_common import NAMES, call, settings, source_options, table


@configured(DiversityConfig, names=NAMES, parsed={"measures": "measures"})
@click.command("diversity")
@source_options
@click.option("--measures", default="surf,sem", show_default=True, help="Any of surf, sem, alg.")
@click.option("--encoder")
@click.option("--judge-backend")
@click.option("--judge-model")
@click.option("--batch-size", type=click.IntRange(min=1))
def diversity(**opts: Any) -> None:
    """Mean diversity of each run's K-tuples (plans, or programs for plan-less methods):
    D_surf = 1 - Self-BLEU-4, D_sem = mean cosine distance, D_alg = judge category coverage."""
    from cppo_bench.api.diversity import diversity as diversity_api

    config = build_config(DiversityConfig, settings(opts))
    result = call(diversity_api, config, "judging tuple members")

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    body = [
        [r.benchmark, r.method, str(r.seed), r.kind, str(r.tuples), fmt(r.d_surf), fmt(r.d_sem),
         fmt(r.d_alg), f"{r.unparseable}/{r.judged}" if r.judged else "-"]
        for r in result
    ]  # fmt: skip
    cols = ["benchmark", "method", "seed", "of", "tuples", "D_surf", "D_sem", "D_alg", "unparsed"]
    table("diversity of K-tuples (mean over tuples)", cols, body)
