"""The report's pass@K vs pass@K+ tables, from the audits `cppo-bench audit` stored beside
the runs: per method and benchmark, the drop with its hierarchical-bootstrap interval, and
the problems whose original tests let the most wrong programs through."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plus_tables(runs_root: Path, resamples: int = 1000, seed: int = 0) -> list[Any]:
    """[] when no run has been audited (the report then has no such table)."""
    from cppo_bench.augment.audit import plus_rows, read_audits, weakest
    from cppo_bench.report.model import Cell, Column, Row, Table

    audits = read_audits(runs_root)
    if not audits:
        return []
    rows = []
    for r in plus_rows(audits, resamples=resamples, seed=seed):
        oracle = "" if r.oracle == "references" else " [model-written oracle]"
        rows.append(
            Row(
                (r.bench, r.method + oracle, r.model, str(r.k)),
                [
                    Cell(r.pass_k, n_seeds=r.seeds, n_problems=r.problems),
                    Cell(r.pass_k_plus, n_seeds=r.seeds, n_problems=r.problems),
                    Cell(
                        r.drop,
                        interval=None,
                        n_seeds=r.seeds,
                        n_problems=r.problems,
                        notes=[
                            f"95% interval [{r.drop_ci[0]:+.3f}, {r.drop_ci[1]:+.3f}] "
                            "(hierarchical bootstrap over problems and seeds)"
                        ],
                    ),
                    Cell(float(r.problems)),
                    Cell(float(r.seeds)),
                ],  # fmt: skip
            )
        )
    main = Table(
        name="pass_at_k_plus",
        title="pass@K against pass@K+ (augmented tests)",
        caption="pass@K+ counts a problem solved only when an accepted program also passes "
        "the augmented tests (cppo-bench augment). Drop = pass@K - pass@K+; its 95% interval "
        "is a paired hierarchical bootstrap over problems and seeds. n: problems every seed "
        "covers.",
        row_headers=("Benchmark", "Method", "Model", "K"),
        columns=[
            Column(("pass@K",), 1, percent=True),
            Column(("pass@K+",), 1, percent=True),
            Column(("drop",), 1, signed=True, percent=True),
            Column(("n",), 0),
            Column(("seeds",), 0),
        ],
        rows=rows,
    )
    weak_rows = [
        Row((bench, pid), [Cell(float(n)), Cell(float(f)), Cell(f / n if n else None)])
        for bench, pid, n, f in weakest(audits, limit=20)
    ]
    weak = Table(
        name="weakest_tests",
        title="Problems with the weakest original tests",
        caption="Accepted programs (over every audited run) that the augmented tests reject.",
        row_headers=("Benchmark", "Problem"),
        columns=[
            Column(("accepted",), 0),
            Column(("rejected",), 0),
            Column(("share",), 1, percent=True),
        ],  # fmt: skip
        rows=weak_rows,
    )
    return [main, weak] if weak_rows else [main]
