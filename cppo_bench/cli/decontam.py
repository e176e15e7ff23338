"""`cppo-bench decontam`: overlap matrix between training and evaluation sources, and the
training set with every evaluation problem removed."""

from __future__ import annotations

from pathlib import Path

import click

from cppo_bench.util.termsafe import echo, markup

SPEC_HELP = "BENCH, BENCH=PATH, or a JSONL file of Problem dicts."


def _cell_text(cell: object) -> str:
    any_, exact, fuzzy, id_ = (getattr(cell, k) for k in ("any", "exact", "fuzzy", "id"))
    return "·" if any_ == 0 else f"{any_} ({exact}/{fuzzy}/{id_})"


def scoped_options(pairs: tuple[str, ...]) -> dict[str, dict]:
    """-o KEY=VALUE (scope "": every benchmark source) and -o BENCH:KEY=VALUE (that one)."""
    from cppo_bench.cli.options import parse_kv

    by_scope: dict[str, list[str]] = {}
    for pair in pairs:
        head, eq, _ = pair.partition("=")
        scope, colon, key = head.partition(":")
        scope, rest = (scope, pair[len(scope) + 1 :]) if colon and eq else ("", pair)
        by_scope.setdefault(scope, []).append(rest)
    return {scope: parse_kv(tuple(p)) for scope, p in by_scope.items()}


@click.command("decontam")
@click.option(
    "--train", "train_specs", multiple=True, required=True, help=f"Training source: {SPEC_HELP}"
)
@click.option(
    "--eval", "eval_specs", multiple=True, required=True, help=f"Evaluation source: {SPEC_HELP}"
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for filtered_train.jsonl and overlap.json.",
)
@click.option(
    "--ngram",
    default=13,
    show_default=True,
    type=click.IntRange(min=1),
    help="Word n-gram length for fuzzy matching.",
)
@click.option(
    "--threshold",
    default=0.5,
    show_default=True,
    type=click.FloatRange(0.0, 1.0, min_open=True),
    help="Fuzzy match when the n-gram similarity reaches this.",
)
@click.option(
    "--metric",
    default="containment",
    show_default=True,
    type=click.Choice(["containment", "jaccard"]),
    help="containment: shared / smaller set; jaccard: shared / union.",
)
@click.option(
    "--max-df",
    default=100,
    show_default=True,
    type=click.IntRange(min=0),
    help="Ignore n-grams found in more than this many problems (boilerplate); 0: none.",
)
@click.option("--strict", is_flag=True, help="Stop at the first malformed record.")
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
def decontam(
    train_specs: tuple[str, ...],
    eval_specs: tuple[str, ...],
    out_dir: Path,
    ngram: int,
    threshold: float,
    metric: str,
    max_df: int,
    strict: bool,
    option_pairs: tuple[str, ...],
) -> None:
    """Find evaluation problems in training data (exact, n-gram and source-id matches), print
    the overlap matrix of all sources, and write the filtered training set."""
    from rich.table import Table

    from cppo_bench.benchmarks.loadreport import load_line
    from cppo_bench.decontam import DecontamConfig, decontaminate
    from cppo_bench.decontam.overlap import Role
    from cppo_bench.decontam.sources import load_source_result, unique_labels
    from cppo_bench.errors import DataError
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    console = Console()
    err = Console(stderr=True)
    sources = []
    scoped = scoped_options(option_pairs)
    roles: tuple[tuple[Role, tuple[str, ...]], ...] = (
        ("train", tuple(train_specs)),
        ("eval", tuple(eval_specs)),
    )
    for role, specs in roles:
        for spec in specs:
            bench = spec.partition("=")[0]
            options = {**scoped.get("", {}), **scoped.get(bench, {})}
            source, loaded = load_source_result(spec, role, strict=strict, options=options)
            errors = loaded.errors
            # read / kept / dropped and why, for every source (to stderr: stdout is
            # the overlap table)
            echo(f"{role} {load_line(spec, loaded)}", err=True)
            for e in errors[:5]:
                err.print(f"[yellow]skipped[/] {markup(e)}", markup=True, highlight=False)
            if len(errors) > 5:
                err.print(f"[yellow]skipped[/] {len(errors) - 5} more malformed records")
            if not source.problems:
                raise DataError(f"{spec}: no problems loaded")
            sources.append(source)
    sources = unique_labels(sources)

    config = DecontamConfig(ngram, threshold, metric, max_df or None)  # type: ignore[arg-type]
    total = sum(len(s.problems) for s in sources)
    from cppo_bench.util.progress import progress_bar

    with progress_bar("fingerprinting statements", total) as advance:
        result = decontaminate(sources, config, on_fingerprint=advance)
    train_path, report_path = result.write(out_dir)

    table = Table(
        title=f"Overlap (records of the row matched in the column; {ngram}-grams, "
        f"{metric} >= {threshold})",
        caption="any (exact/fuzzy/id); the diagonal counts duplicates within a source",
    )
    table.add_column("source \\ in", style="bold")
    table.add_column("n", justify="right")
    for s in sources:
        table.add_column(markup(s.label), justify="right")
    for i, s in enumerate(sources):
        cells = [_cell_text(result.matrix[(i, j)]) for j in range(len(sources))]
        table.add_row(markup(s.label), str(len(s.problems)), *cells)
    console.print(table)
    report = result.report()
    console.print(
        f"training records: {report['train_total']}, removed {report['train_removed']}, "
        f"kept {report['train_kept']}"
    )
    if result.empty_statements:
        err.print(
            f"[yellow]warning[/]: {len(result.empty_statements)} problems have an empty "
            "statement after canonicalisation; only their source ids were compared"
        )
    console.print(f"wrote {markup(train_path)} and {markup(report_path)}")
