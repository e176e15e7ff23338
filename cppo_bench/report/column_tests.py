"""A grid column under the hierarchical bootstrap (cppo_bench.metrics.bootstrap): the dagger
marks of the spec's candidate groups against the strongest baseline of the cell (with their
p-values), and each cell's percentile interval when the spec asks for one (`interval`).

Candidate groups are tested in the order the spec lists them: a row of group G against the
strongest row among the rows in no listed group and the groups listed before G. With one
group that is the study's rule (CPPO against the strongest non-CPPO row); with
``[passk, cppo]`` it is the study's ordering, tier by tier.
"""

from __future__ import annotations

import numpy as np

from cppo_bench.metrics import dagger_marks, hierarchical_bootstrap
from cppo_bench.report.cells import CellEngine
from cppo_bench.report.model import Table
from cppo_bench.report.specs import TableSpec

SHARED_NOTE = "significance tested on the problems all rows of the cell share"
TOO_FEW_NOTE = "no significance test: the rows share fewer than 2 problems"


def interval_tag(confidence: float) -> str:
    """What a cell's [low, high] is (said once above the table, like a ±'s kind)."""
    return f"in brackets: the {100 * confidence:g}% hierarchical bootstrap interval"


def _matrices(
    spec: TableSpec, engine: CellEngine, table: Table, j: int
) -> dict[int, tuple[list[str], np.ndarray]]:
    """Row index -> (problem ids, [seeds][problems] values) of column j's rows with values."""
    col = table.columns[j]
    out = {}
    for i, sel in enumerate(spec.rows):
        got = engine.matrix(spec, sel, col.meta["model"], col.meta["bench"], col.meta["_spec"])
        if got is not None:
            out[i] = got
    return out


def add_intervals(spec: TableSpec, engine: CellEngine, table: Table, j: int) -> None:
    """Each cell of column j gets the percentile interval of its own mean: its problems and
    (a trained row) its training seeds resampled, the same draw rule the marks use. The
    interval replaces the ± on display; the CSV keeps both."""
    if spec.interval is None:
        return
    for i, (_pids, mat) in _matrices(spec, engine, table, j).items():
        cell = table.rows[i].cells[j]
        if mat.shape[1] < 2:
            continue  # one problem: no interval to speak of
        result = hierarchical_bootstrap({"row": mat}, resamples=engine.resamples, seed=engine.seed)
        cell.interval = result.interval("row", spec.interval)
        cell.interval_kind = interval_tag(spec.interval)


def mark_column(spec: TableSpec, engine: CellEngine, table: Table, j: int) -> None:
    """Daggers (and, with `p_values`, a p footnote) in column j for every candidate row."""
    sig = spec.significance
    assert sig is not None
    mats = _matrices(spec, engine, table, j)
    tiers = []
    for group in sig.candidates:
        cands = [i for i in mats if spec.rows[i].group == group]
        bases = [i for i in mats if spec.rows[i].group not in sig.baselines_of(group)]
        if cands and bases:
            tiers.append((cands, bases))
    if not tiers:
        return
    shared = sorted(set.intersection(*(set(p) for p, _ in mats.values())))
    if len(shared) < 2:
        for cands, _ in tiers:
            for i in cands:
                table.rows[i].cells[j].notes.append(TOO_FEW_NOTE)
        return
    outcomes = {}
    for i, (pids, mat) in mats.items():
        where = {p: n for n, p in enumerate(pids)}
        outcomes[str(i)] = mat[:, [where[p] for p in shared]]
    result = hierarchical_bootstrap(outcomes, resamples=engine.resamples, seed=engine.seed)
    for cands, bases in tiers:
        marks = dagger_marks(result, [str(i) for i in cands], [str(i) for i in bases], sig.alpha)
        for d in marks:
            cell = table.rows[int(d.method)].cells[j]
            cell.p_value = d.p_value
            if d.significant:
                cell.mark = sig.mark
            if sig.p_values:
                cell.notes.append(
                    f"one-sided p = {d.p_value:.3f} that it beats the strongest baseline of "
                    f"the cell, {spec.rows[int(d.baseline)].label} (hierarchical bootstrap)"
                )
            if len(shared) < cell.n_problems:
                cell.notes.append(SHARED_NOTE)
