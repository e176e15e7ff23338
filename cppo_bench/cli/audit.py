"""`cppo-bench audit RUN...`: pass@K against pass@K+ (the runs' accepted programs judged
again with an augmented test set; see docs/augment.md). Builds one AuditConfig
(cppo_bench.api.audit) and prints what `audit` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.api.audit import AuditConfig
from cppo_bench.api.config import build_config
from cppo_bench.cli.options import configured, parse_kv
from cppo_bench.util.termsafe import echo, safe

EXISTING = click.Path(exists=True, file_okay=False, path_type=Path)


@configured(AuditConfig, names={"tests_dir": "tests", "data_path": "data"},
            parsed={"option_pairs": "loader_options"}, view=("quiet",))  # fmt: skip
@click.command("audit")
@click.argument("runs", nargs=-1, required=True, type=EXISTING)
@click.option("--tests", "tests_dir", required=True, type=EXISTING)
@click.option("--data", "data_path", type=click.Path(exists=True))
@click.option("-o", "--option", "option_pairs", multiple=True, metavar="KEY=VALUE",
              help="Loader option, as for `run` (e.g. -o difficulty=all).")  # fmt: skip
@click.option("--strict", is_flag=True)
@click.option("--workers", type=click.IntRange(1))
@click.option("--resamples", type=click.IntRange(1))
@click.option("--quiet", is_flag=True, help="No progress bar.")
def audit(tests_dir: Path, data_path: str | None, option_pairs: tuple[str, ...], quiet: bool,
          **opts: Any) -> None:  # fmt: skip
    """Re-judge every AC program of stored runs with an augmented test set."""
    from cppo_bench.api.audit import audit as audit_api
    from cppo_bench.util.termsafe import console as Console

    config = build_config(AuditConfig, {**opts, "tests": tests_dir, "data": data_path,
                                         "loader_options": parse_kv(option_pairs)})  # fmt: skip
    done = audit_api(config, on_note=echo, progress=not quiet)
    Console().print(plus_table(list(done.rows)))
    if done.weakest:
        echo("weakest original tests (accepted programs the augmented tests reject):")
        for bench, pid, n, f in done.weakest:
            echo(f"  {safe(bench)}/{safe(pid)}: {f} of {n}")


def plus_table(rows: list) -> Any:
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
