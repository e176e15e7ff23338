"""Table kinds: how a spec becomes a Table. Registered by name (a spec's ``kind``).

- grid: rows = method selectors; columns = model x benchmark x metric; optional daggers;
- seed_deltas: per-seed paired differences A - B, their mean and a Student-t interval;
- gain_decomposition: pass@K gain over a baseline split into the part from planning with
  independently drawn strategies and the part from coordinating them in one tuple.
"""

from __future__ import annotations

from cppo_bench.metrics import benchmark_pass_at_k, seed_difference_ci
from cppo_bench.report.cells import SPREAD_NOTE, CellEngine, metric_digits, metric_label
from cppo_bench.report.labels import (  # noqa: F401  (importable here as before)
    NO_MODEL,
    TABLE_KINDS,
    Builder,
    bench_label,
    model_label,
)
from cppo_bench.report.model import MISSING_NOTE, Cell, CellRequest, Column, Row, Table
from cppo_bench.report.specs import Selector, TableSpec


def column_models(spec: TableSpec, engine: CellEngine) -> list[str | None]:
    """Explicit models, or every model holding runs of the table's benchmarks; [None] (one
    placeholder column group) when the store has none, so the table still shows its rows."""
    if spec.columns.models is not None:
        return list(spec.columns.models)
    benches = column_benches(spec, engine)
    return list(engine.index.models(benches)) or [None]


def column_benches(spec: TableSpec, engine: CellEngine) -> list[str]:
    benches = list(spec.columns.benches)
    if spec.columns.other_benches:
        benches += [b for b in engine.index.benches() if b not in benches]
    return benches


def _grid_columns(spec: TableSpec, engine: CellEngine) -> list[Column]:
    cols = []
    for model in column_models(spec, engine):
        for bench in column_benches(spec, engine):
            for metric in spec.columns.metrics:
                cols.append(
                    Column(
                        header=(
                            model_label(spec, model),
                            bench_label(bench, engine.index),
                            metric_label(metric),
                        ),
                        digits=metric_digits(metric),
                        meta={
                            "model": model,
                            "bench": bench,
                            "metric": metric.metric,
                            "k": metric.k,
                            "_spec": metric,
                        },
                    )
                )
    return cols


@TABLE_KINDS.register("grid")
def build_grid(spec: TableSpec, engine: CellEngine) -> Table:
    from cppo_bench.report.extra_tables import add_average_columns, external_rows

    columns = _grid_columns(spec, engine)
    rows = []
    for sel in spec.rows:
        cells = [
            engine.cell(spec, sel, c.meta["model"], c.meta["bench"], c.meta["_spec"])
            for c in columns
        ]
        rows.append(Row((sel.label,), cells))
    if spec.columns.average:
        columns = add_average_columns(spec, engine, columns, rows)
    if engine.study_numbers:  # a spec's published cells: rows of their own, labelled
        rows += external_rows(spec, columns)
    table = Table(
        spec.name, spec.title, spec.caption, ("Method",), columns, rows, list(spec.notes),
        spec.path,
    )  # fmt: skip
    from cppo_bench.report.column_tests import add_intervals, mark_column

    for j, col in enumerate(columns):
        add_intervals(spec, engine, table, j)
        if spec.significance is not None and col.meta["metric"] in spec.significance.metrics:
            mark_column(spec, engine, table, j)
    shown_pm = [c for r in rows for c in r.cells if c.spread is not None and c.interval is None]
    if any(c.spread_over == "problems" for c in shown_pm):
        # say what an inference-only row's ± is (each number also names its own)
        spread = SPREAD_NOTE if engine.spread == "study" else f"± by --spread {engine.spread}"
        table.notes.append(spread)
    return table


def _seed_scores(
    engine: CellEngine, spec: TableSpec, sel: Selector, model: str | None, bench: str
) -> dict[int, dict[str, float]]:
    return engine.computed(spec, sel, model, bench, spec.metric).per_seed


@TABLE_KINDS.register("seed_deltas")
def build_seed_deltas(spec: TableSpec, engine: CellEngine) -> Table:
    seeds = spec.trained_seeds
    metric = metric_label(spec.metric)
    digits = metric_digits(spec.metric)
    columns = [
        Column((f"Δ {metric}", f"seed {s}"), digits, True, meta={"seed": s, "stat": "delta"})
        for s in seeds
    ]
    columns += [
        Column((f"Δ {metric}", "mean"), digits, True, meta={"stat": "mean"}),
        Column((f"Δ {metric}", "95% CI"), digits, True, meta={"stat": "ci"}),
    ]
    rows = []
    for comp in spec.comparisons:
        for model in column_models(spec, engine):
            for bench in column_benches(spec, engine):
                b = comp.b or strongest_baseline(spec, engine, comp.strongest, model, bench)
                cells = _delta_cells(spec, engine, comp.a, b, model, bench, seeds)
                if comp.b is None:
                    note = f"B = the strongest baseline of this cell by mean {metric}: {b.label}"
                    cells[-2].notes.append(note)
                rows.append(
                    Row(
                        (
                            f"{comp.a.label} − {b.label}",
                            model_label(spec, model),
                            bench_label(bench, engine.index),
                        ),
                        cells,
                        {"model": model, "bench": bench, "k": spec.metric.k},
                    )
                )
    return Table(
        spec.name,
        spec.title,
        spec.caption,
        ("Comparison", "Model", "Benchmark"),
        columns,
        rows,
        list(spec.notes),
        spec.path,
    )


def strongest_baseline(
    spec: TableSpec,
    engine: CellEngine,
    pool: tuple[Selector, ...],
    model: str | None,
    bench: str,
) -> Selector:
    """The baseline of `pool` with the highest cell mean (over its seeds) for this model and
    benchmark; the first of the pool when none has runs yet (so --check asks for it)."""
    scored = [(engine.cell(spec, s, model, bench, spec.metric).value, s) for s in pool]
    have = [(v, -i, s) for i, (v, s) in enumerate(scored) if v is not None]
    return max(have, key=lambda t: (t[0], t[1]))[2] if have else pool[0]


def _delta_cells(
    spec: TableSpec,
    engine: CellEngine,
    a: Selector,
    b: Selector,
    model: str | None,
    bench: str,
    seeds: tuple[int, ...],
) -> list[Cell]:
    sa = {s: v for s, v in _seed_scores(engine, spec, a, model, bench).items() if s in seeds}
    sb = {s: v for s, v in _seed_scores(engine, spec, b, model, bench).items() if s in seeds}
    cells = [Cell() for _ in range(len(seeds) + 2)]
    notes = []
    shared_ref = len(sb) == 1 and len(sa) > 1  # one baseline run: the reference of every seed
    if shared_ref:
        notes.append(f"{b.label} has one run: every seed of {a.label} is compared with it")
    for i, s in enumerate(seeds):
        va, vb = sa.get(s), next(iter(sb.values())) if shared_ref else sb.get(s)
        if va is None or vb is None:
            missing = [x for x, have in ((a, va), (b, vb)) if have is None]
            cells[i].notes.append(MISSING_NOTE)
            cells[i].request = CellRequest(missing[0], model, bench, spec.metric.k, (s,))
            continue
        common = sorted(set(va) & set(vb))
        if not common:
            cells[i].notes.append("the two runs share no problem")
            continue
        cells[i].value = benchmark_pass_at_k([va[p] for p in common]) - benchmark_pass_at_k(
            [vb[p] for p in common]
        )
        cells[i].n_problems, cells[i].n_seeds = len(common), 1
    deltas = [c.value for c in cells[: len(seeds)] if c.value is not None]
    mean_cell, ci_cell = cells[-2], cells[-1]
    if len(deltas) >= 2:
        ci = seed_difference_ci(deltas)
        mean_cell.value, ci_cell.interval = ci.mean, (ci.low, ci.high)
        mean_cell.n_seeds = ci_cell.n_seeds = ci.n
    else:
        for c in (mean_cell, ci_cell):
            c.notes.append("a t-interval needs paired results on at least 2 seeds")
    for c in cells:
        c.notes.extend(notes)
    return cells


_DECOMP_COLUMNS = (
    ("baseline", "P(direct)", False, False),
    ("iid", "P(iid)", False, False),
    ("joint", "P(joint)", False, False),
    ("total", "Δ_total", True, False),
    ("plan", "Δ_plan", True, False),
    ("coord", "Δ_coord", True, False),
    ("share", "coord. share", False, True),
)


@TABLE_KINDS.register("gain_decomposition")
def build_gain_decomposition(spec: TableSpec, engine: CellEngine) -> Table:
    digits = metric_digits(spec.metric)
    columns = [
        Column((label,), 1 if pct else digits, signed, pct, meta={"part": key})
        for key, label, signed, pct in _DECOMP_COLUMNS
    ]
    rows = []
    for dec in spec.decompositions:
        for model in column_models(spec, engine):
            for bench in column_benches(spec, engine):
                parts = [
                    engine.cell(spec, sel, model, bench, spec.metric)
                    for sel in (dec.baseline, dec.iid, dec.joint)
                ]
                rows.append(
                    Row(
                        (dec.label, model_label(spec, model), bench_label(bench, engine.index)),
                        parts + _decompose(*(p.value for p in parts)),
                        {"model": model, "bench": bench, "k": spec.metric.k},
                    )
                )
    return Table(
        spec.name,
        spec.title,
        spec.caption,
        ("Pipeline", "Model", "Benchmark"),
        columns,
        rows,
        list(spec.notes),
        spec.path,
    )


def _decompose(base: float | None, iid: float | None, joint: float | None) -> list[Cell]:
    out = [Cell() for _ in range(4)]
    if base is None or iid is None or joint is None:
        for c in out:
            c.notes.append("needs all three of P(direct), P(iid), P(joint)")
        return out
    total, plan, coord = joint - base, iid - base, joint - iid
    out[0].value, out[1].value, out[2].value = total, plan, coord
    if total > 0:
        out[3].value = coord / total
    else:
        out[3].notes.append("share undefined when Δ_total <= 0")
    return out


def build_table(spec: TableSpec, engine: CellEngine) -> Table:
    return TABLE_KINDS.get(spec.kind)(spec, engine)


from cppo_bench.report import extra_tables as _extra_tables  # noqa: E402,F401  (registers kinds)
