"""`cppo-bench report`: regenerate the study's tables and figures from stored runs.

Imports nothing heavy at start-up: the report package (numpy, yaml) loads when the command
runs, matplotlib (Agg) only when figures are drawn, an encoder or judge only when asked for.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import click

from cppo_bench.util.termsafe import markup, safe


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(f.strip() for f in text.split(",") if f.strip())
    known = ("md", "tex", "csv")
    bad = [f for f in formats if f not in known]
    if bad or not formats:
        raise click.BadParameter(f"choose from {', '.join(known)} (comma-separated), got {text!r}")
    return formats


def _judge(backend: str | None, model: str | None) -> AbstractContextManager[Any]:
    """The D_alg judge (a registered backend name or `package.module:factory`), closed when
    the report is done; None without --judge-backend."""
    if backend is None:
        return nullcontext(None)
    from cppo_bench.cli.options import open_backend

    return open_backend(backend, model, {})


@click.command("report")
@click.option(
    "--runs",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Run store written by `cppo-bench run`.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Where tables, figures and index.html go.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Only list the cells that lack runs and the `cppo-bench run` command that "
    "fills each; write nothing. Exit status 1 when any cell lacks runs.",
)
@click.option(
    "--specs",
    "specs_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Directory of table spec YAML files that replace (same file "
    "name) or add to the shipped specs.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Hierarchical bootstrap resamples behind the dagger marks.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap and of random first-K selection.",
)
@click.option(
    "--formats",
    default="md,tex,csv",
    show_default=True,
    help="Table formats to write (index.html is always written).",
)
@click.option(
    "--encoder",
    default=None,
    help="Sentence encoder for D_sem (name or local folder, e.g. all-MiniLM-L6-v2); "
    "without it D_sem cells stay empty with a footnote.",
)
@click.option(
    "--judge-backend",
    default=None,
    help="Backend of the strategy judge for D_alg (e.g. hf, or package.module:factory); "
    "without it "
    "D_alg cells stay empty with a footnote.",
)
@click.option("--judge-model", default=None, help="Judge model for --judge-backend.")
@click.option(
    "--spread",
    type=click.Choice(["study", "seed-std", "bootstrap-se"]),
    default="study",
    show_default=True,
    help="The ± of every cell, named next to it. study: trained rows std over training "
    "seeds, inference-only rows bootstrap SE over problems (as `stats passk`); seed-std or "
    "bootstrap-se: that one for every row.",
)
def report(
    runs: Path,
    out: Path,
    check: bool,
    specs_dir: Path | None,
    resamples: int,
    seed: int,
    formats: str,
    encoder: str | None,
    judge_backend: str | None,
    judge_model: str | None,
    spread: str,
) -> None:
    """Write the study's tables (Markdown, LaTeX, CSV), figures and one index.html."""
    from cppo_bench.errors import DataError
    from cppo_bench.report import build_report, check_text, compute
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    fmts = _formats(formats)
    console = Console(stderr=True)
    try:
        enc = None
        if encoder is not None:
            from cppo_bench.diversity import EncoderUnavailable, load_encoder

            try:
                enc = load_encoder(encoder)
            except EncoderUnavailable as exc:
                raise click.ClickException(str(exc)) from None
        with (
            _judge(judge_backend, judge_model) as judge,
            console.status("computing tables") as status,
        ):

            def progress(msg: str) -> None:
                status.update(msg)

            if check:
                computed = compute(
                    runs,
                    specs_dir=specs_dir,
                    resamples=resamples,
                    seed=seed,
                    encoder=enc,
                    judge=judge,
                    progress=progress,
                    spread=spread,
                )
            else:
                result = build_report(
                    runs,
                    out,
                    specs_dir=specs_dir,
                    resamples=resamples,
                    seed=seed,
                    formats=fmts,
                    encoder=enc,
                    judge=judge,
                    progress=progress,
                    spread=spread,
                )
                computed = result.computed
    except (DataError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    for warning in computed.index.warnings:
        console.print(f"[yellow]warning:[/] {markup(warning)}")
    if check:
        click.echo(check_text(computed), nl=False)
        if computed.missing:
            raise SystemExit(1)
        return
    shown = computed.shown()
    click.echo(
        f"{len(computed.tables)} tables ({shown['numbers']} of {computed.n_cells} cells show a "
        f"number: {shown['partial']} partial, {shown['degraded']} from a degraded method; "
        f"from {len(computed.index.runs)} runs), {len(result.figures)} figures -> {out}"
    )
    for skipped in result.skipped_figures:
        click.echo(f"  figure skipped: {safe(skipped)}")
    click.echo(f"  open {out / 'index.html'}; `cppo-bench report --check` lists missing runs")
