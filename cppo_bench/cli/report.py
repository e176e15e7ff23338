"""`cppo-bench report`: regenerate the study's tables and figures from stored runs.

Imports nothing heavy at start-up: the report package (numpy, yaml) loads when the command
runs, matplotlib (Agg) only when figures are drawn, an encoder or judge only when asked for.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import click

from cppo_bench.util.termsafe import echo, markup, quote, safe


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(f.strip() for f in text.split(",") if f.strip())
    known = ("md", "tex", "csv")
    bad = [f for f in formats if f not in known]
    if bad or not formats:
        raise click.BadParameter(
            f"choose from {', '.join(known)} (comma-separated), got {quote(text)}"
        )
    return formats


def _skipped(index: Any) -> str:
    """'; 1 unreadable run and 2 bad record lines left out' beside the numbers, or ''."""
    runs, lines = getattr(index, "skipped_runs", 0), getattr(index, "skipped_lines", 0)
    if not runs and not lines:
        return ""
    return f"; {runs} unreadable run(s) and {lines} bad record line(s) left out, named above"


def _judge(backend: str | None, model: str | None) -> AbstractContextManager[Any]:
    """The D_alg judge (a registered backend name or `package.module:factory`), closed when
    the report is done; None without --judge-backend."""
    if backend is None:
        return nullcontext(None)
    from cppo_bench.api.names import open_backend

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
@click.option(
    "--show-empty",
    is_flag=True,
    help="Keep the rows, columns and tables no run fills (default: left out, the empty "
    "tables named in one line; --check lists the runs they need).",
)
@click.option(
    "--study-numbers",
    is_flag=True,
    help="Also show the study's published tables (published_main, published_gemma) and a "
    "spec's external cells, in rows and columns of their own, each citing its source; by "
    "default a report shows only your runs.",
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
    show_empty: bool = False,
    study_numbers: bool = False,
) -> None:
    """Write the study's tables (Markdown, LaTeX, CSV), figures and one index.html."""
    from cppo_bench.report import build_report, check_text, compute
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    fmts = _formats(formats)
    console = Console(stderr=True)
    enc = None
    if encoder is not None:
        from cppo_bench.diversity import load_encoder

        enc = load_encoder(encoder)
    from cppo_bench.util.progress import progress_bar

    # the one progress module: a live line on a terminal, plain lines in a log
    with (
        _judge(judge_backend, judge_model) as judge,
        progress_bar("report") as bar,
    ):

        def progress(msg: str) -> None:
            bar.note(msg)

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
                study_numbers=study_numbers,
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
                show_empty=show_empty,
                study_numbers=study_numbers,
            )
            computed = result.computed
    for warning in computed.index.warnings:
        console.print(f"[yellow]warning:[/] {markup(warning)}")
    if check:
        echo(check_text(computed), nl=False, lines=True)
        if computed.missing:
            raise SystemExit(1)
        return
    shown = computed.shown()
    echo(
        f"{len(computed.tables)} tables ({shown['numbers']} of {computed.n_cells} cells show a "
        f"number: {shown['partial']} partial, {shown['degraded']} from a degraded method; "
        f"from {len(computed.index.runs)} runs{_skipped(computed.index)}), "
        f"{len(result.figures)} figures -> {out}"
    )
    for skipped in result.skipped_figures:
        echo(f"  figure skipped: {safe(skipped)}")
    echo(f"  open {out / 'index.html'}; `cppo-bench report --check` lists missing runs")
