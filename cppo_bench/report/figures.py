"""Figures (matplotlib, Agg backend; PNG and PDF), drawn from the computed tables.

Kinds, named by a table spec's ``figures`` list: grouped_bars (a grid table's first metric
per benchmark), pass_at_k_curves (a K-sweep grid), diversity_gain (a diversity grid: its
metric against the pass@K gain over a baseline, with an OLS line and 95% band). The
reward-model diagnostics (ROC with AUC, validity x outcome heat map) are drawn whenever
trainer logs exist (see cppo_bench.store.training_schema). A figure without data is skipped
with a reason, never drawn empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cppo_bench.metrics.roc import roc_auc, roc_points
from cppo_bench.report.cells import CellEngine
from cppo_bench.report.labels import bench_label, model_label
from cppo_bench.report.model import Table
from cppo_bench.report.specs import MetricSpec, TableSpec, parse_selector
from cppo_bench.store.training_schema import GateLog
from cppo_bench.util.registry import Registry


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    caption: str
    png: Path
    pdf: Path
    table: str | None = None  # the table it belongs with (shown after it); None: diagnostics


class Skipped(Exception):
    """The figure has nothing to draw; the message says why."""


Drawer = Callable[[TableSpec, Table, CellEngine, dict[str, Any]], tuple[Any, str, str]]
FIGURE_KINDS: Registry[Drawer] = Registry("figure kind")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit import
    # labels come from data (model names, methods): drawn as plain text, never parsed as
    # mathtext ('$...$' would be typeset, 450 nested braces a RecursionError) or TeX
    matplotlib.rcParams["text.parse_math"] = False
    matplotlib.rcParams["text.usetex"] = False
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out_dir: Path, name: str) -> tuple[Path, Path]:
    from cppo_bench.files.outdir import OutDir

    out = OutDir(out_dir)  # the name is checked; a link planted at the file is not followed
    try:
        png = out.save_figure(fig, f"{name}.png", dpi=130, bbox_inches="tight")
        pdf = out.save_figure(fig, f"{name}.pdf", bbox_inches="tight")
    finally:
        _plt().close(fig)
    return png, pdf


def _from_zero(ax: Any) -> None:
    """Rates and counts start at 0; all-zero data would otherwise get matplotlib's
    symmetric -0.04..0.04 axis, which reads like noise around zero rather than zero."""
    top = ax.dataLim.y1
    if np.isfinite(top) and top > 1e-9:
        ax.set_ylim(bottom=0)
    else:
        ax.set_ylim(0, 1.0)


def _grid_values(table: Table, metric: str, k: int | None = None) -> dict[tuple, Any]:
    """(row label, model, bench, k) -> cell, for the grid columns of `metric`."""
    out = {}
    for row, col, cell in table.cells():
        if col.meta.get("metric") == metric and (k is None or col.meta.get("k") == k):
            out[(row.labels[0], col.meta["model"], col.meta["bench"], col.meta["k"])] = cell
    return out


def _error(cell: Any) -> tuple[float, float]:
    """(below, above) the bar: a cell's interval where it has one, else its ± over seeds
    (trained rows), else none."""
    if cell.interval is not None and cell.value is not None:
        return max(0.0, cell.value - cell.interval[0]), max(0.0, cell.interval[1] - cell.value)
    spread = cell.spread if cell.spread_over == "seeds" and cell.spread else 0.0
    return spread, spread


def _errors(cells: list[Any]) -> np.ndarray:
    return np.array([_error(c) for c in cells], dtype=np.float64).T.reshape(2, len(cells))


def _ordered(keys: Any, index: int) -> list:
    return list(dict.fromkeys(key[index] for key in keys))


@FIGURE_KINDS.register("grouped_bars")
def grouped_bars(
    spec: TableSpec, table: Table, engine: CellEngine, opts: dict[str, Any]
) -> tuple[Any, str, str]:
    metric = opts.get("metric", "pass")
    k_opt = opts.get("k")  # which K of a table with several (default: the first column's)
    cells = {k: c for k, c in _grid_values(table, metric, k_opt).items() if c.value is not None}
    if not cells:
        raise Skipped(f"no {metric} values in table {table.name}")
    plt = _plt()
    models = _ordered(cells, 1)
    fig, axes = plt.subplots(len(models), 1, figsize=(9, 3.6 * len(models)), squeeze=False)
    for ax, model in zip(axes[:, 0], models, strict=True):
        mine = {k: c for k, c in cells.items() if k[1] == model}
        rows, benches = _ordered(mine, 0), _ordered(mine, 2)
        width = 0.8 / len(rows)
        for i, row in enumerate(rows):
            xs, ys, shown, marks = [], [], [], []
            for j, bench in enumerate(benches):
                cell = next((c for k, c in mine.items() if k[0] == row and k[2] == bench), None)
                if cell is not None:
                    xs.append(j + (i - (len(rows) - 1) / 2) * width)
                    ys.append(cell.value)
                    shown.append(cell)
                    marks.append(cell.mark)
            ax.bar(xs, ys, width, yerr=_errors(shown), capsize=2, label=row)
            for x, y, m in zip(xs, ys, marks, strict=True):
                if m:
                    ax.annotate(m, (x, y), ha="center", va="bottom", fontsize=11)
        ax.set_xticks(range(len(benches)), [bench_label(b) for b in benches])
        ax.set_ylabel(
            next(
                c
                for c in table.columns
                if c.meta.get("metric") == metric and k_opt in (None, c.meta.get("k"))
            ).header[-1]
        )
        ax.set_title(model_label(spec, model))
        ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.grid(axis="y", alpha=0.3)
        _from_zero(ax)
    fig.tight_layout()
    bars = (
        f"the {100 * spec.interval:g}% hierarchical bootstrap interval"
        if spec.interval is not None
        else "the std over training seeds (trained methods only)"
    )
    caption = f"{table.title}: bars per benchmark; error bars are {bars}; † as in the table."
    return fig, f"{table.name}_bars", caption


@FIGURE_KINDS.register("pass_at_k_curves")
def pass_at_k_curves(
    spec: TableSpec, table: Table, engine: CellEngine, opts: dict[str, Any]
) -> tuple[Any, str, str]:
    cells = {
        k: c
        for k, c in _grid_values(table, opts.get("metric", "pass")).items()
        if c.value is not None
    }
    if not cells:
        raise Skipped(f"no pass@K values in table {table.name}")
    plt = _plt()
    models, benches = _ordered(cells, 1), _ordered(cells, 2)
    fig, axes = plt.subplots(
        len(models), len(benches), squeeze=False, figsize=(4.2 * len(benches), 3.4 * len(models))
    )
    for r, model in enumerate(models):
        for c, bench in enumerate(benches):
            ax = axes[r, c]
            if not any(k[1] == model and k[2] == bench for k in cells):
                ax.set_visible(False)  # this model has no run on this benchmark
                continue
            for row in _ordered(cells, 0):
                pts = sorted(
                    (k[3], cell)
                    for k, cell in cells.items()
                    if k[0] == row and k[1] == model and k[2] == bench
                )
                if pts:
                    ks = [p[0] for p in pts]
                    ax.errorbar(
                        ks,
                        [p[1].value for p in pts],
                        marker="o",
                        capsize=2,
                        label=row,
                        yerr=_errors([p[1] for p in pts]),
                    )
            ax.set_xscale("log", base=2)
            ax.set_xticks(
                sorted({k[3] for k in cells}), [str(k) for k in sorted({k[3] for k in cells})]
            )
            ax.set_xlabel("K (solver attempts)")
            ax.set_ylabel("pass@K")
            _from_zero(ax)
            ax.set_title(f"{model_label(spec, model)} · {bench_label(bench)}", fontsize=9)
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes.ravel()[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(
        handles,
        labels,
        fontsize=7,
        loc="lower center",
        ncol=min(4, len(labels)),
        bbox_to_anchor=(0.5, 1.0),
    )
    fig.tight_layout()
    return fig, f"{table.name}_curves", f"{table.title}: pass@K against the attempt budget K."


@FIGURE_KINDS.register("diversity_gain")
def diversity_gain(
    spec: TableSpec, table: Table, engine: CellEngine, opts: dict[str, Any]
) -> tuple[Any, str, str]:
    from cppo_bench.metrics import ols_fit

    x_metric, k = opts.get("x", "d_surf"), int(opts.get("k", 4))
    baseline = parse_selector(spec.path, "figures.baseline", opts.get("baseline"))
    pass_k = MetricSpec("pass", k)
    points = []
    for (label, model, bench, _), cell in _grid_values(table, x_metric).items():
        row = next(r for r in spec.rows if r.label == label)
        if cell.value is None or row.same_runs(baseline):
            continue
        mine = engine.cell(spec, row, model, bench, pass_k).value
        base = engine.cell(spec, baseline, model, bench, pass_k).value
        if mine is not None and base is not None:
            points.append((cell.value, mine - base, label, bench))
    if not points:
        raise Skipped(f"no cell has both {x_metric} and pass@{k} for it and {baseline.label}")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for label in _ordered(points, 2):
        group = [p for p in points if p[2] == label]
        ax.scatter([p[0] for p in group], [p[1] for p in group], label=label, s=28)
    xs, ys = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    note = ""
    if len(points) >= 3 and np.ptp(xs) > 0:
        fit = ols_fit(xs, ys)
        ax.plot(
            fit.grid,
            fit.fit,
            color="black",
            lw=1.2,
            label=f"OLS: slope {fit.slope:+.3f}, r = {fit.r:+.2f}",
        )
        ax.fill_between(
            fit.grid,
            fit.band_low,
            fit.band_high,
            color="gray",
            alpha=0.25,
            label="95% confidence band",
        )
    else:
        note = " (too few distinct points for an OLS fit)"
    ax.axhline(0, color="gray", lw=0.6)
    x_label = next(c for c in table.columns if c.meta.get("metric") == x_metric).header[-1]
    ax.set_xlabel(x_label)
    ax.set_ylabel(f"pass@{k} gain over {baseline.label}")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    caption = (
        f"{x_label} of each method's K attempts against its pass@{k} gain over "
        f"{baseline.label}, one point per model and benchmark{note}."
    )
    return fig, f"{table.name}_vs_gain", caption


def gate_diagnostics(log: GateLog, out_dir: Path) -> Figure:
    """ROC with AUC (labelled records) and the validity x outcome heat map (records with
    `passed`): the gate's decision J = 1{p >= tau} against whether the tuple passed."""
    roc = log.roc_records()
    labels = np.array([r.label for r in roc], dtype=int)
    has_roc = labels.size > 0 and 0 < labels.sum() < labels.size
    heat = [r for r in log.records if r.passed is not None]
    outcome = np.array([int(bool(r.passed)) for r in heat], dtype=int)
    # the gate's score against what the solver achieved: does validity predict success?
    has_outcome_roc = outcome.size > 0 and 0 < outcome.sum() < outcome.size
    if not has_roc and not heat:
        raise Skipped(
            f"trainer log {log.path}: no labelled records with both classes and no "
            "'passed' outcomes"
        )
    plt = _plt()
    n_panels = int(has_roc) + int(has_outcome_roc) + int(bool(heat))
    fig, axes = plt.subplots(1, n_panels, figsize=(5 * n_panels, 4.2), squeeze=False)
    panels = iter(axes[0])
    if has_roc:
        scores = np.array([r.gate_prob for r in roc])
        fpr, tpr = roc_points(scores, labels)
        ax = next(panels)
        ax.plot(fpr, tpr, lw=1.5, label=f"AUC = {roc_auc(scores.tolist(), labels.tolist()):.3f}")
        ax.plot([0, 1], [0, 1], ls="--", color="gray", lw=0.8)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_title(f"gate ROC vs judge labels ({len(roc)} tuples)", fontsize=9)
        ax.legend(loc="lower right")
    if has_outcome_roc:
        scores = np.array([r.gate_prob for r in heat])
        fpr, tpr = roc_points(scores, outcome)
        ax = next(panels)
        auc = roc_auc(scores.tolist(), outcome.tolist())
        ax.plot(fpr, tpr, lw=1.5, color="tab:orange", label=f"AUC = {auc:.3f}")
        ax.plot([0, 1], [0, 1], ls="--", color="gray", lw=0.8)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_title(f"gate ROC vs solver outcome ({len(heat)} tuples)", fontsize=9)
        ax.legend(loc="lower right")
    if heat:
        counts = np.zeros((2, 2), dtype=int)
        for r in heat:
            counts[0 if r.gate_prob >= r.tau else 1, 0 if r.passed else 1] += 1
        rates = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        ax = next(panels)
        im = ax.imshow(rates, cmap="Blues", vmin=0, vmax=1)
        for i in range(2):
            for j in range(2):
                ax.text(
                    j,
                    i,
                    f"{counts[i, j]}\n({rates[i, j]:.0%})",
                    ha="center",
                    va="center",
                    color="white" if rates[i, j] > 0.6 else "black",
                )
        ax.set_xticks([0, 1], ["pass@K solved", "not solved"])
        ax.set_yticks([0, 1], ["gate: valid", "gate: invalid"])
        ax.set_title(f"validity x outcome ({len(heat)} tuples)", fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, label="share of row")
    fig.suptitle(f"Reward-model diagnostics: {log.name}", fontsize=10)
    fig.tight_layout()
    name = f"gate_{log.name}"
    png, pdf = _save(fig, out_dir, name)
    caption = (
        "Validity gate: ROC on judge-labelled (held-out when marked) tuples with its AUC; "
        "ROC of the gate score against the tuple's pass@K outcome; "
        "gate decision J = 1{p >= tau} against the tuple's pass@K outcome."
    )
    return Figure(name, f"Reward-model diagnostics ({log.name})", caption, png, pdf)


def table_figures(
    spec: TableSpec, table: Table, engine: CellEngine, out_dir: Path
) -> tuple[list[Figure], list[str]]:
    """The figures a table spec asks for, and a reason for each one skipped."""
    made, skipped = [], []
    for opts in spec.figures:
        try:
            fig, name, caption = FIGURE_KINDS.get(opts["kind"])(spec, table, engine, opts)
        except Skipped as why:
            skipped.append(f"{spec.name}/{opts['kind']}: {why}")
            continue
        png, pdf = _save(fig, out_dir, name)
        made.append(Figure(name, table.title, caption, png, pdf, table.name))
    return made, skipped
