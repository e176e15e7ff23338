"""`cppo-bench report`: regenerate the study's tables and figures from stored runs.

Imports nothing heavy at start-up: the report package (numpy, yaml) loads when the command
runs, matplotlib (Agg) only when figures are drawn, an encoder or judge only when asked for.
The command builds one ReportConfig (cppo_bench.api.report) and prints what `report` returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.api.config import build_config, help_of
from cppo_bench.api.report import ReportConfig
from cppo_bench.cli.options import configured
from cppo_bench.util.termsafe import echo, markup, safe

PATH = click.Path(path_type=Path)


def _skipped(done: Any) -> str:
    """'; 1 unreadable run and 2 bad record lines left out' beside the numbers, or ''."""
    if not done.skipped_runs and not done.skipped_lines:
        return ""
    return (f"; {done.skipped_runs} unreadable run(s) and {done.skipped_lines} bad record "
            "line(s) left out, named above")  # fmt: skip


@configured(ReportConfig, names={"specs_dir": "specs"}, parsed={"formats": "formats"})
@click.command("report")
@click.option("--runs", type=PATH)
@click.option("--out", type=PATH)
@click.option("--check", is_flag=True)
@click.option("--specs", "specs_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--resamples", type=click.IntRange(min=1))
@click.option("--seed", type=int)
@click.option("--formats", default="md,tex,csv", show_default=True,
              help=help_of(ReportConfig.__dataclass_fields__["formats"]))  # fmt: skip
@click.option("--encoder")
@click.option("--judge-backend")
@click.option("--judge-model")
@click.option("--spread", type=click.Choice(["study", "seed-std", "bootstrap-se"]))
@click.option("--show-empty", is_flag=True)
@click.option("--study-numbers", is_flag=True)
def report(specs_dir: Path | None, **opts: Any) -> None:
    """Write the study's tables (Markdown, LaTeX, CSV), figures and one index.html."""
    from cppo_bench.api.report import report as report_api
    from cppo_bench.util.progress import progress_bar
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    config = build_config(ReportConfig, {**opts, "specs": specs_dir})
    # the one progress module: a live line on a terminal, plain lines in a log
    with progress_bar("report") as bar:
        done = report_api(config, progress=bar.note)
    console = Console(stderr=True)
    for warning in done.warnings:
        console.print(f"[yellow]warning:[/] {markup(warning)}")
    if config.check:
        echo(done.check_text, nl=False, lines=True)
        if done.missing:
            raise SystemExit(1)
        return
    echo(
        f"{done.tables} tables ({done.numbers} of {done.cells} cells show a number: "
        f"{done.partial} partial, {done.degraded} from a degraded method; from {done.runs} "
        f"runs{_skipped(done)}), {done.figures} figures -> {done.out}"
    )
    for skipped in done.skipped_figures:
        echo(f"  figure skipped: {safe(skipped)}")
    echo(f"  open {done.out / 'index.html'}; `cppo-bench report --check` lists missing runs")
