"""The report's LiveCodeBench tables: pass@K by difficulty and by release window (the
problems released in each increment's window; LiveCodeBench's contamination view), computed
by `cppo_bench.stats.pass_at_k_by` from the runs whose records keep their problems'
difficulty and contest date. No such run: no table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LCB = "lcb"
GROUPS = (("difficulty", "difficulty"), ("window", "release window (contest date)"))


def slice_tables(
    runs_root: Path, k: int = 4, resamples: int = 1000, seed: int = 0, spread: str = "study"
) -> list[Any]:
    """[] when the store holds no LiveCodeBench run whose records carry the fields."""
    from cppo_bench.errors import DataError
    from cppo_bench.report.model import Cell, Column, Row, Table
    from cppo_bench.stats import pass_at_k
    from cppo_bench.stats.read import load_runs
    from cppo_bench.stats.slices import UNKNOWN, pass_at_k_by

    try:
        frame = load_runs(runs_root)
    except DataError:
        return []
    frame = frame[(frame["benchmark"] == LCB) & (frame["n_branches"] >= k)]
    tables = []
    for by, what in GROUPS:
        column = "difficulty" if by == "difficulty" else "contest_date"
        known = frame[frame[column].notna()]
        if known.empty:
            continue
        result = pass_at_k_by(
            known, by, k, measure=pass_at_k, spread=spread, resamples=resamples, seed=seed
        )
        groups = [g for g in dict.fromkeys(result[by]) if g != UNKNOWN]
        methods = sorted(set(result["method"]))
        cells: dict[tuple[str, str], Cell] = {}
        for _, r in result.iterrows():
            u = r["cell"].value
            cells[(r["method"], r[by])] = Cell(
                u.mean, u.spread, u.over, n_seeds=len(r["cell"].seeds), n_problems=u.n_problems,
                spread_kind=u.kind,
            )  # fmt: skip
        rows = [Row((m,), [cells.get((m, g), Cell()) for g in groups]) for m in methods]
        tables.append(
            Table(
                name=f"lcb_by_{by}",
                title=f"LiveCodeBench pass@{k} by {what}",
                caption=f"pass@{k} of each method over the LiveCodeBench problems of each "
                f"{what}, as LiveCodeBench reports it; n is the group's own problems. "
                "`cppo-bench stats passk --bench lcb --by "
                f"{by}` prints the same numbers; --start-date/--end-date narrow them.",
                row_headers=("Method",),
                columns=[Column((str(g),), 3, meta={"bench": LCB, by: g}) for g in groups],
                rows=rows,
            )
        )
    return tables
