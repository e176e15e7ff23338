"""Cell computation: the runs of a cell -> per-seed, per-problem metric values -> mean ± std.

The formulas live in cppo_bench.metrics and cppo_bench.diversity (called through
cppo_bench.report.measures); this module picks the runs, aggregates, and records why a cell
is empty or qualified (footnotes). Conventions:

- a trained row (its runs tagged with a checkpoint) is mean ± std over training seeds;
- an inference-only row is the mean over problems ± its bootstrap standard error over
  problems (the report's resamples and seed); several sampling seeds are averaged per
  problem first (so it stays one "seed", as the bootstrap expects);
- all seeds of a cell are scored on the problems they share (footnoted when that drops some).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cppo_bench.metrics import mean_std
from cppo_bench.metrics.uncertainty import cell_uncertainty
from cppo_bench.plan.validity import DEGRADED_MARK, Tally, run_tally
from cppo_bench.report.measures import METRICS, Ctx, MetricDef, metric_digits, metric_label
from cppo_bench.report.model import MISSING_NOTE, Cell, CellRequest
from cppo_bench.report.run_index import CellRuns, RunIndex
from cppo_bench.report.specs import MetricSpec, Selector, TableSpec

__all__ = ["METRICS", "SPREAD_NOTE", "CellEngine", "Computed", "metric_digits", "metric_label"]

SPREAD_NOTE = (
    "± for inference-only rows: bootstrap standard error of the mean over evaluation "
    "problems (problems resampled with replacement); trained rows: std over training seeds."
)


@dataclass
class Computed:
    runs: CellRuns
    per_seed: dict[int, dict[str, float]]  # per-problem metrics: seed -> problem -> value
    per_run: dict[int, float]  # run-level metrics: seed -> value
    notes: list[str]
    tally: Tally = field(default_factory=Tally)  # tuple validity / fallbacks of the runs


def full_set(runs: CellRuns) -> int:
    """The benchmark's full evaluation set as the cell's runs loaded it (their dataset
    size; an older manifest without it: the problems it was asked for)."""
    sizes = [r.manifest.dataset_size or len(r.manifest.problem_ids) for r in runs.by_seed.values()]
    return max(sizes, default=0)


class CellEngine:
    """Computes (and caches) cells; the same cell asked by two tables is computed once."""

    def __init__(
        self,
        index: RunIndex,
        *,
        resamples: int = 1000,
        seed: int = 0,
        encoder: Any = None,
        judge: Any = None,
        spread: str = "study",
        study_numbers: bool = False,
    ) -> None:
        self.index, self.resamples, self.seed = index, resamples, seed
        # the study's published cells (a spec's `external`, e.g. Gemma's LCB-v6 numbers):
        # only when asked (`report --study-numbers`), never mixed into a study of one's own
        self.study_numbers = study_numbers
        self.spread = spread  # cppo_bench.metrics.uncertainty.SPREADS
        self.encoder, self.judge = encoder, judge
        self._cache: dict[str, Computed] = {}

    def computed(
        self, spec: TableSpec, row: Selector, model: str | None, bench: str, metric: MetricSpec
    ) -> Computed:
        derive = self.derives(spec, metric)
        mdef = METRICS.get(metric.metric)
        key = repr((row, model, bench, metric, derive))
        if key not in self._cache:
            self._cache[key] = self._compute(row, model, bench, metric, mdef, derive)
        return self._cache[key]

    @staticmethod
    def derives(spec: TableSpec, metric: MetricSpec) -> bool:
        wanted = metric.derive if metric.derive is not None else spec.derive_k
        return wanted and METRICS.get(metric.metric).derivable

    def _compute(
        self,
        row: Selector,
        model: str | None,
        bench: str,
        metric: MetricSpec,
        mdef: MetricDef,
        derive: bool,
    ) -> Computed:
        runs = self.index.select(row, model, bench, metric.k, derive=derive)
        out = Computed(runs, {}, {}, [])
        for seed, run in sorted(runs.by_seed.items()):
            records = list(self.index.records(run).values())
            out.tally.add(run_tally(records))
            ctx = Ctx(run, records, metric, row, self.seed, self.encoder, self.judge)
            if mdef.problem is not None:
                values = mdef.problem(ctx)
                out.per_seed[seed] = {
                    r.problem_id: float(v)
                    for r, v in zip(records, values, strict=True)
                    if not math.isnan(v)
                }
            elif (value := mdef.run(ctx)) is not None:  # type: ignore[misc]
                out.per_run[seed] = value
            out.notes.extend(n for n in ctx.notes if n not in out.notes)
            done = len(records)
            if run.manifest.status != "complete" or done < len(run.manifest.problem_ids):
                note = "incomplete run: computed from the problems recorded so far"
                if note not in out.notes:
                    out.notes.append(note)
        has_values = any(out.per_seed.values()) or bool(out.per_run)
        if runs.k is not None and runs.k != metric.k and has_values:
            est = (
                "unbiased estimator"
                if (metric.estimator or row.estimator) == "unbiased"
                else f"first-K rule, select={row.select}"
            )
            out.notes.append(f"read off k={runs.k} runs ({est})")
        out.notes.extend(identity_notes(runs))
        return out

    def matrix(
        self, spec: TableSpec, row: Selector, model: str | None, bench: str, metric: MetricSpec
    ) -> tuple[list[str], np.ndarray] | None:
        """[seeds][problems] on the problems all seeds share (one averaged row for an
        inference-only row), or None when there are no values."""
        comp = self.computed(spec, row, model, bench, metric)
        seeds = [s for s in sorted(comp.per_seed) if comp.per_seed[s]]
        if not seeds:
            return None
        pids = sorted(set.intersection(*(set(comp.per_seed[s]) for s in seeds)))
        if not pids:
            return None
        mat = np.array([[comp.per_seed[s][p] for p in pids] for s in seeds], dtype=np.float64)
        return pids, (mat if row.is_trained else mat.mean(axis=0, keepdims=True))

    def cell(
        self, spec: TableSpec, row: Selector, model: str | None, bench: str, metric: MetricSpec
    ) -> Cell:
        comp = self.computed(spec, row, model, bench, metric)
        found = sorted(comp.runs.by_seed)
        expected = spec.expected_seeds(row)
        missing = tuple(s for s in expected if s not in found)
        request = (
            CellRequest(row, model, bench, metric.k, missing, self.derives(spec, metric))
            if missing
            else None
        )
        cell = Cell(
            request=request,
            runs=[str(r.path) for _, r in sorted(comp.runs.by_seed.items())],
            notes=list(comp.notes),
        )
        if not found:
            cell.notes = [MISSING_NOTE]
            return cell
        tally = comp.tally
        cell.validity = tally.text()
        if tally.degraded():
            cell.mark += DEGRADED_MARK
        if cell.validity:  # the method's own count, next to the number it qualifies
            cell.notes.append(f"{row.method}: {cell.validity}")
        if missing:
            cell.notes.append(
                f"seeds {', '.join(map(str, missing))} of "
                f"{', '.join(map(str, expected))} have no run yet"
            )
        mdef = METRICS.get(metric.metric)
        if mdef.problem is not None:
            self._fill_problem_cell(cell, spec, row, model, bench, metric, comp, mdef)
        else:
            self._fill_run_cell(cell, row, comp, mdef)
        return cell

    def _fill_problem_cell(
        self,
        cell: Cell,
        spec: TableSpec,
        row: Selector,
        model: str | None,
        bench: str,
        metric: MetricSpec,
        comp: Computed,
        mdef: MetricDef,
    ) -> None:
        got = self.matrix(spec, row, model, bench, metric)
        if got is None:
            if not comp.notes:
                cell.notes.append(mdef.na_note)
            return
        pids, mat = got
        union = set().union(*comp.per_seed.values())
        if len(union) > len(pids):
            cell.notes.append(
                "seeds cover different problems: the problems all seeds share are used"
            )
        # the raw [seeds][problems] matrix: `cell_uncertainty` averages seeds itself where
        # the spread is over problems (the same call `stats passk` makes)
        seeds = [s for s in sorted(comp.per_seed) if comp.per_seed[s]]
        raw = np.array([[comp.per_seed[s][p] for p in pids] for s in seeds], dtype=np.float64)
        u = cell_uncertainty(
            raw,
            row.is_trained,
            self.spread,  # type: ignore[arg-type]
            resamples=self.resamples,
            seed=self.seed,
            n_total=full_set(comp.runs),
        )
        cell.value, cell.spread_over, cell.spread = u.mean, u.over, u.spread
        cell.spread_kind, cell.n_total = u.kind, u.n_total
        cell.n_seeds, cell.n_problems = u.n_seeds, u.n_problems
        if cell.partial:
            cell.notes.append(
                f"partial: {u.n_problems} of the benchmark's {u.n_total} evaluation problems"
            )

    def _fill_run_cell(self, cell: Cell, row: Selector, comp: Computed, mdef: MetricDef) -> None:
        values = [comp.per_run[s] for s in sorted(comp.per_run)]
        if not values:
            if not comp.notes:
                cell.notes.append(mdef.na_note)
            return
        cell.n_seeds = len(values)
        cell.n_total = full_set(comp.runs)
        if row.is_trained and len(values) >= 2:
            ms = mean_std(np.array(values)[:, None], trained=True)
            cell.value, cell.spread, cell.spread_over = ms.mean, ms.std, ms.over
            cell.spread_kind = "seed_std"
        else:
            cell.value = float(np.mean(values))


def identity_notes(runs: CellRuns) -> list[str]:
    """What a cell says about the runs behind it: one run per seed is used, and runs that
    differ in identity (cppo_bench.store.identity: sampling, options, data, served model)
    are named by the differing field, never pooled without a word."""
    from cppo_bench.store.identity import MODEL_KEY, identity_fields, varying

    skip: tuple[str, ...] = ("seed", "model", "trained", "base_model", "train_seed")
    every_run = [*runs.by_seed.values(), *runs.ignored]
    if every_run and all(r.trained for r in every_run):
        # each training seed is its own checkpoint: the model the backend served and the
        # weights' content differ by design (an untrained row's seeds must still use one
        # model, so for it they stay)
        skip += ("served_model", MODEL_KEY)
    notes = []
    used = [identity_fields(r.manifest) for r in runs.by_seed.values()]
    if len(used) > 1 and (keys := varying(used, skip=skip)):
        notes.append(f"the seeds' runs differ in {', '.join(keys)}")
    if runs.ignored:
        every = used + [identity_fields(r.manifest) for r in runs.ignored]
        keys = varying(every, skip=skip)
        why = f" (they differ in {', '.join(keys)})" if keys else ""
        notes.append(f"several runs share a seed: the complete, largest, newest is used{why}")
    from cppo_bench.benchmarks.testsource import describe

    for run in runs.by_seed.values():  # a score on public examples only says so
        tests = run.manifest.extra.get("tests") or {}
        text = describe(tests)
        if tests.get("public_only") and f"tests: {text}" not in notes:
            notes.append(f"tests: {text}")
    return notes
