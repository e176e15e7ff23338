"""`cppo-bench decontam`: overlap matrix between training and evaluation sources, and the
training set with every evaluation problem removed. Builds one DecontamConfig
(cppo_bench.api.decontam) and prints what `decontam` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.api.config import build_config
from cppo_bench.api.decontam import DecontamConfig
from cppo_bench.cli.options import configured, parse_kv
from cppo_bench.util.termsafe import echo, markup


def _cell_text(cell: object) -> str:
    any_, exact, fuzzy, id_ = (getattr(cell, k) for k in ("any", "exact", "fuzzy", "id"))
    return "·" if any_ == 0 else f"{any_} ({exact}/{fuzzy}/{id_})"


def scoped_options(pairs: tuple[str, ...]) -> dict[str, dict]:
    """-o KEY=VALUE (scope "": every benchmark source) and -o BENCH:KEY=VALUE (that one)."""
    by_scope: dict[str, list[str]] = {}
    for pair in pairs:
        head, eq, _ = pair.partition("=")
        scope, colon, key = head.partition(":")
        scope, rest = (scope, pair[len(scope) + 1 :]) if colon and eq else ("", pair)
        by_scope.setdefault(scope, []).append(rest)
    return {scope: parse_kv(tuple(p)) for scope, p in by_scope.items()}


@configured(DecontamConfig, names={"train_specs": "train", "eval_specs": "eval",
            "out_dir": "out"}, parsed={"option_pairs": "loader_options"})  # fmt: skip
@click.command("decontam")
@click.option("--train", "train_specs", multiple=True, required=True)
@click.option("--eval", "eval_specs", multiple=True, required=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--ngram", type=click.IntRange(min=1))
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True))
@click.option("--metric", type=click.Choice(["containment", "jaccard"]))
@click.option("--max-df", type=click.IntRange(min=0))
@click.option("--strict", is_flag=True)
@click.option(
    "-o",
    "--option",
    "--loader-option",
    "option_pairs",
    multiple=True,
    metavar="[BENCH:]KEY=VALUE",
    help="Loader option, as in `cppo-bench run` (e.g. -o difficulty=all); applies to every "
    "benchmark source, or with BENCH: only to that benchmark's (-o apps:subset=0).",
)
def decontam(train_specs: tuple[str, ...], eval_specs: tuple[str, ...], out_dir: Path,
             option_pairs: tuple[str, ...], **opts: Any) -> None:  # fmt: skip
    """Find evaluation problems in training data (exact, n-gram and source-id matches), print
    the overlap matrix of all sources, and write the filtered training set."""
    from rich.table import Table

    from cppo_bench.api.decontam import decontam as decontam_api
    from cppo_bench.util.progress import progress_bar
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    config = build_config(DecontamConfig, {**opts, "train": train_specs, "eval": eval_specs,
                                           "out": out_dir,
                                           "loader_options": scoped_options(option_pairs)})  # fmt: skip
    console, err = Console(), Console(stderr=True)

    def note(line: str) -> None:  # read / kept / dropped per source: stderr (stdout: the table)
        if line.startswith("skipped "):
            err.print(f"[yellow]skipped[/] {markup(line[8:])}", markup=True, highlight=False)
        else:
            echo(line, err=True)

    done = decontam_api(config, on_note=note,
                        progress=lambda total: progress_bar("fingerprinting statements", total))  # fmt: skip
    table = Table(
        title=f"Overlap (records of the row matched in the column; {config.ngram}-grams, "
        f"{config.metric} >= {config.threshold})",
        caption="any (exact/fuzzy/id); the diagonal counts duplicates within a source",
    )
    table.add_column("source \\ in", style="bold")
    table.add_column("n", justify="right")
    for s in done.sources:
        table.add_column(markup(s.label), justify="right")
    for i, s in enumerate(done.sources):
        cells = [_cell_text(done.result.matrix[(i, j)]) for j in range(len(done.sources))]
        table.add_row(markup(s.label), str(len(s.problems)), *cells)
    console.print(table)
    report = done.report
    console.print(
        f"training records: {report['train_total']}, removed {report['train_removed']}, "
        f"kept {report['train_kept']}"
    )
    if done.result.empty_statements:
        err.print(
            f"[yellow]warning[/]: {len(done.result.empty_statements)} problems have an empty "
            "statement after canonicalisation; only their source ids were compared"
        )
    console.print(f"wrote {markup(done.train_path)} and {markup(done.report_path)}")
