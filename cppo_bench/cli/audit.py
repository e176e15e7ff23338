"""`cppo-bench audit RUN...`: pass@K against pass@K+ (the runs' accepted programs judged
again with an augmented test set; see docs/augment.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cppo_bench.cli.options import parse_kv
from cppo_bench.util.termsafe import echo, safe


@click.command("audit")
@click.argument("runs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))  # fmt: skip
@click.option("--tests", "tests_dir", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The augmented test set (cppo-bench augment --out).")  # fmt: skip
@click.option("--data", "data_path", type=click.Path(exists=True), default=None,
              help="The runs' data [the manifest's data_source when it is a path].")  # fmt: skip
@click.option("-o", "--option", "option_pairs", multiple=True, metavar="KEY=VALUE",
              help="Loader option, as for `run` (e.g. -o difficulty=all).")  # fmt: skip
@click.option(
    "--strict",
    is_flag=True,
    help="Also run every original test, without stopping at the first failure.",
)
@click.option("--workers", type=click.IntRange(1), default=None, help="Parallel sandboxes.")
@click.option("--resamples", type=click.IntRange(1), default=1000, show_default=True,
              help="Bootstrap resamples of the pass@K - pass@K+ interval.")  # fmt: skip
@click.option("--quiet", is_flag=True, help="No progress bar.")
def audit(runs: tuple[Path, ...], tests_dir: Path, data_path: str | None,
          option_pairs: tuple[str, ...], strict: bool, workers: int | None, resamples: int,
          quiet: bool) -> None:  # fmt: skip
    """Re-judge every AC program of stored runs with an augmented test set."""
    from cppo_bench.augment.audit import audit_run, plus_rows, store_audit, weakest
    from cppo_bench.cli.testsets import load_tests
    from cppo_bench.errors import DataError
    from cppo_bench.runner.pipeline import load_problems
    from cppo_bench.runner.rundata import reload_args
    from cppo_bench.store.runs import read_manifest, read_records
    from cppo_bench.util.registry import UnknownNameError
    from cppo_bench.util.termsafe import console as Console
    from cppo_bench.verifier import SandboxError

    options = parse_kv(option_pairs)
    docs = []
    loaded: dict[tuple[str, str, str], dict] = {}
    for run_dir in runs:
        try:
            manifest = read_manifest(run_dir)
            ts = load_tests(tests_dir, manifest.bench)
            data, run_options, _ = reload_args(manifest, data_path, options)
            key = (manifest.bench, str(data), json.dumps(run_options, sort_keys=True))
            if key not in loaded:
                result = load_problems(manifest.bench, data, None, run_options)
                loaded[key] = {p.problem_id: p for p in result.problems}
            records = list(read_records(run_dir).values())
            doc = audit_run(manifest, records, loaded[key], ts, strict=strict, workers=workers,
                            progress=not quiet)  # fmt: skip
        except (DataError, UnknownNameError, SandboxError) as exc:
            raise DataError(f"{run_dir}: {exc}") from None
        path = store_audit(run_dir, doc)
        echo(f"{safe(run_dir)}: {doc['programs_rejudged']} accepted programs re-judged, "
                   f"{doc['programs_failed']} fail the stronger tests -> {safe(path)}")  # fmt: skip
        docs.append(doc)
    console = Console()
    console.print(plus_table(plus_rows(docs, resamples=resamples)))
    weak = weakest(docs)
    if weak:
        echo("weakest original tests (accepted programs the augmented tests reject):")
        for bench, pid, n, f in weak:
            echo(f"  {safe(bench)}/{safe(pid)}: {f} of {n}")


def plus_table(rows: list):
    from rich.table import Table

    ks = {r.k for r in rows}
    at = f"pass@{ks.pop()}" if len(ks) == 1 else "pass@K"  # pass@4 / pass@4+ when one K
    table = Table(title=f"{at} vs {at}+ (augmented tests)")
    for col in ("bench", "method", "model", "K", "seeds", "n", at, f"{at}+",
                "drop [95% CI]", "oracle"):  # fmt: skip
        table.add_column(col, justify="right" if col[0] in "Kspnd" else "left")
    for r in rows:
        table.add_row(r.bench, r.method, r.model, str(r.k), str(r.seeds), str(r.problems),
                      f"{r.pass_k:.1%}", f"{r.pass_k_plus:.1%}",
                      f"{r.drop:+.1%} [{r.drop_ci[0]:+.1%}, {r.drop_ci[1]:+.1%}]",
                      r.oracle if r.oracle == "references" else "MODEL-WRITTEN")  # fmt: skip
    table.caption = ("n: problems (shared by all seeds); drop: pass@K - pass@K+, interval: "
                     "hierarchical bootstrap over problems and seeds")  # fmt: skip
    return table
