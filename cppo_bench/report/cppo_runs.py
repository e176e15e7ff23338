"""What the report reads from `cppo-bench train cppo` pipeline folders (JSON artifacts only).

A pipeline folder holds one sub-folder per stage whose ``train_manifest.json`` names its
``stage`` (the layout of cppo_bench.store.training_schema). From these the report takes:

* the reward-model diagnostics: ``rm/val_scores.jsonl`` (held-out judge labels) and
  ``joint/gate_log.jsonl`` (gate scores with the tuple's pass@K outcome) as one gate log;
* the CPPO training curves: ``warmup/metrics.jsonl`` and ``joint/metrics.jsonl``;
* the exposure audit: every stage's ``exposure.json`` (component, source split, problems)
  checked against every evaluation run's problems through the decontamination index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files import userfiles
from cppo_bench.problem import Problem, SourceIds
from cppo_bench.store.training_schema import (
    GATE_LOG,
    STAGES,
    TRAIN_MANIFEST,
    VAL_SCORES,
    GateLog,
    read_gate_log,
    read_manifest,
    read_metrics,
)


@dataclass(frozen=True)
class Pipeline:
    path: Path
    manifests: dict[str, dict[str, Any]]  # stage -> manifest

    @property
    def name(self) -> str:
        return self.path.name


def find_pipelines(runs_root: Path) -> list[Pipeline]:
    out = []
    for sft in sorted(Path(runs_root).rglob(f"sft/{TRAIN_MANIFEST}")):
        root = sft.parent.parent
        manifests = {}
        for stage in STAGES:
            m = read_manifest(root / stage)
            if m is not None and m.get("stage") == stage:
                manifests[stage] = m
        if "sft" in manifests:
            out.append(Pipeline(root, manifests))
    return out


def pipeline_gate_log(p: Pipeline) -> GateLog | None:
    paths = [p.path / "rm" / VAL_SCORES, p.path / "joint" / GATE_LOG]
    return read_gate_log(paths, f"cppo-{p.name}", p.path)


CURVES = (
    ("r_out_mean", "R_out (pass@K of a tuple)"),
    ("j_accept_mean", "J acceptance"),
    ("r_plan_mean", "R_plan = J x R_out"),
    ("r_plan_zero_mean", "reward sparsity (R_plan = 0)"),
    ("dup_tuple_mean", "duplicate-tuple rate"),
    ("plan_valid_mean", "plan validity (rules)"),
    ("solver_pass_mean", "solver pass rate"),
    ("grad_norm", "grad norm"),
    ("param_step_norm", "parameter-step norm"),
    ("planner_adv_nonzero_mean", "planner adv. non-zero"),
    ("solver_adv_nonzero_mean", "solver adv. non-zero"),
    ("kl", "KL to reference"),
)


def training_curves(p: Pipeline) -> dict[str, list[dict[str, Any]]]:
    return {stage: read_metrics(p.path / stage) for stage in ("warmup", "joint")}


def draw_curves(p: Pipeline, out_dir: Path) -> Any:
    from cppo_bench.report.figures import Figure, Skipped, _plt, _save

    logs = training_curves(p)
    panels = [(k, t) for k, t in CURVES if any(k in row for rows in logs.values() for row in rows)]
    if not panels:
        raise Skipped(f"cppo pipeline {p.path}: no warm-up or joint metrics.jsonl")
    plt = _plt()
    cols = 4
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 2.8 * nrows), squeeze=False)
    for ax, (key, title) in zip(axes.flat, panels, strict=False):
        offset = 0
        for i, (stage, rows) in enumerate(logs.items()):
            pts = [(offset + int(r["step"]), r[key]) for r in rows if r.get(key) is not None]
            if pts:  # one colour per stage in every panel, whichever stages a panel has
                ax.plot(*zip(*pts, strict=True), marker="o", ms=3, label=stage, color=f"C{i}")
            offset += len(rows)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step (warm-up, then joint)", fontsize=8)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(f"CPPO training curves: {p.name}", fontsize=10)
    fig.tight_layout()
    name = f"cppo_curves_{p.name}"
    png, pdf = _save(fig, out_dir, name)
    caption = (
        "Per-step diagnostics of RM-guided warm-up (R_warm = J) and joint CPPO: outcome, "
        "gate acceptance, gated planner reward and its sparsity, tuple quality, solver "
        "pass rate, update norms and per-region advantage non-zero rates."
    )
    return Figure(name, f"CPPO training curves ({p.name})", caption, png, pdf)


# -- exposure audit --------------------------------------------------------------------------
@dataclass(frozen=True)
class ExposureRow:
    component: str
    source: str
    notes: str
    problems: int
    overlaps: int | None  # eval problems matched; None = not checked (no evaluation set)
    matched: tuple[str, ...] = ()


def _problem(d: dict[str, Any]) -> Problem:
    return Problem(
        benchmark=str(d["benchmark"]),
        problem_id=str(d["problem_id"]),
        statement=str(d.get("statement", "")),
        tests=(),
        source=SourceIds(**d.get("source", {})),
    )


def exposure_components(p: Pipeline) -> list[tuple[str, str, str, list[Problem]]]:
    out = []
    for stage in STAGES:
        path = p.path / stage / "exposure.json"
        if path.is_file():
            data = userfiles.read_json(path, userfiles.MAX_FILE)
            for c in data.get("components", []):
                out.append(
                    (
                        c["component"],
                        c["source"],
                        c.get("notes", ""),
                        [_problem(x) for x in c["problems"]],
                    )
                )
    return out


def exposure_rows(p: Pipeline, evals: Sequence[tuple[str, list[Problem]]]) -> list[ExposureRow]:
    """Every component's problems against every evaluation set (exact hash, fuzzy n-grams and
    source ids: the decontamination index), one row each; matches are listed, not dropped."""
    from cppo_bench.decontam import Source, decontaminate

    rows = []
    for component, source, notes, problems in exposure_components(p):
        if not evals or not problems:
            rows.append(
                ExposureRow(component, source, notes, len(problems), None if not evals else 0)
            )
            continue
        result = decontaminate(
            [
                Source("component", "train", problems),
                *(Source(name, "eval", ps) for name, ps in evals),
            ]
        )
        matched = tuple(sorted({m["eval_uid"] for r in result.removed for m in r.matches}))
        rows.append(ExposureRow(component, source, notes, len(problems), len(matched), matched))
    return rows


def evaluation_sets(index: Any) -> tuple[list[tuple[str, list[Problem]]], list[str]]:
    """The problems of every stored evaluation run, by benchmark (loaded through the harness's
    loaders and restricted to the run's problem ids), and the ones that could not be loaded."""
    from cppo_bench.benchmarks import load_benchmark

    wanted: dict[tuple[str, str], set[str]] = {}
    for run in index.runs:
        m = run.manifest
        wanted.setdefault((m.bench, m.data_source), set()).update(m.problem_ids)
    sets, failed = [], []
    for (bench, source), ids in sorted(wanted.items()):
        data = source if source and Path(source).exists() else None
        try:
            loaded = load_benchmark(bench, data).problems
        except (DataError, OSError, KeyError) as exc:
            failed.append(f"{bench} ({str(exc).splitlines()[0][:100]})")
            continue
        sets.append((bench, [q for q in loaded if q.problem_id in ids]))
    return sets, failed


def exposure_table(p: Pipeline, index: Any) -> Any:
    """The study's per-component exposure audit, generated from the stage manifests."""
    from cppo_bench.report.model import Cell, Column, Row, Table

    evals, failed = evaluation_sets(index)
    rows = []
    leaks = []
    for r in exposure_rows(p, evals):
        if r.overlaps is None:
            seen = "unchecked"
        elif r.overlaps:
            seen = "YES (leak)"
            leaks.append(f"{r.component}: {', '.join(r.matched[:5])}")
        else:
            seen = "no"
        rows.append(
            Row(
                (r.component, r.source, seen, r.notes),
                [Cell(float(r.problems)), Cell(None if r.overlaps is None else float(r.overlaps))],
            )
        )
    for name, problems in evals:
        rows.append(
            Row(
                (f"Final evaluation ({name})", f"{name} held-out", "N/A", "no parameter updates"),
                [Cell(float(len(problems))), Cell(None)],
            )
        )
    notes = [f"Evaluation sets checked: {', '.join(n for n, _ in evals) or 'none stored'}."]
    if failed:
        notes.append("Not loadable, so not checked: " + "; ".join(failed) + ".")
    if leaks:
        notes.append(
            "FAILURE: held-out evaluation problems reached training components: "
            + "; ".join(leaks)
            + "."
        )
    return Table(
        name=f"exposure_audit_{p.name}",
        title=f"Per-component exposure audit ({p.name})",
        caption=(
            "Every pipeline component that reads problem statements, its source split, "
            "and whether any problem of a stored evaluation run matched it under the "
            "decontamination index (canonical hash, n-gram overlap, source ids)."
        ),
        row_headers=("Component", "Source split", "Held-out eval seen?", "Notes"),
        columns=[Column(("problems",), digits=0), Column(("eval matches",), digits=0)],
        rows=rows,
        notes=notes,
    )
