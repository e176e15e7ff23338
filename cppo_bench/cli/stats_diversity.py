"""`cppo-bench stats diversity`: mean diversity of each run's K-tuples."""

from __future__ import annotations

import click

from cppo_bench.cli.stats_common import PATH, _load, _table
from cppo_bench.errors import BackendError
from cppo_bench.util.termsafe import quote


@click.command("diversity")
@click.option("--runs", type=PATH, required=True, help="Run store (or one run directory).")
@click.option("--bench", help="Only this benchmark.")
@click.option("--measures", default="surf,sem", show_default=True, help="Any of surf, sem, alg.")
@click.option(
    "--encoder",
    default="all-mpnet-base-v2",
    show_default=True,
    help="Sentence encoder name or local folder (D_sem).",
)
@click.option(
    "--judge-backend", default="hf", show_default=True, help="Backend of the D_alg judge."
)
@click.option("--judge-model", default=None, help="Judge model (default: the backend's default).")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1))
def diversity(runs, bench, measures, encoder, judge_backend, judge_model, batch_size) -> None:
    """Mean diversity of each run's K-tuples (plans, or programs for plan-less methods):
    D_surf = 1 - Self-BLEU-4, D_sem = mean cosine distance, D_alg = judge category coverage."""
    from cppo_bench.diversity.summary import summarise_diversity

    wanted = {m.strip() for m in measures.split(",") if m.strip()}
    if not wanted or wanted - {"surf", "sem", "alg"}:
        raise click.BadParameter(f"measures must be among surf, sem, alg; got {quote(measures)}")

    from cppo_bench.util.progress import progress_bar
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    encoder_obj = judge = None
    console = Console(stderr=True)
    rows = _load(runs, None, bench)
    if "sem" in wanted:
        from cppo_bench.diversity.semantic import load_encoder

        with console.status(f"loading sentence encoder {encoder}"):
            encoder_obj = load_encoder(encoder)
    if "alg" in wanted:
        from cppo_bench.backends import BACKENDS

        try:
            judge = BACKENDS.get(judge_backend)(judge_model)
        except ImportError as exc:
            raise BackendError(f"judge backend {quote(judge_backend)}: {exc}") from None
    try:
        with progress_bar("judging tuple members") as advance:
            result = summarise_diversity(
                rows, wanted, encoder=encoder_obj, judge=judge, batch_size=batch_size,
                progress=advance,
            )  # fmt: skip
    finally:
        if judge is not None:
            judge.close()

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    body = [
        [r.benchmark, r.method, str(r.seed), r.kind, str(r.tuples), fmt(r.d_surf), fmt(r.d_sem),
         fmt(r.d_alg), f"{r.unparseable}/{r.judged}" if r.judged else "-"]
        for r in result
    ]  # fmt: skip
    cols = ["benchmark", "method", "seed", "of", "tuples", "D_surf", "D_sem", "D_alg", "unparsed"]
    _table("diversity of K-tuples (mean over tuples)", cols, body)
