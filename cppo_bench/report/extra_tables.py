"""Table pieces beyond the plain grid: Avg. columns, external cells, the D_alg classifier's
reliability table, and the qualitative examples table (each method's K attempts side by
side on problems the spec names before any run)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio, userfiles
from cppo_bench.metrics import mean_std
from cppo_bench.report.cells import CellEngine, metric_digits, metric_label
from cppo_bench.report.labels import TABLE_KINDS, bench_label, model_label
from cppo_bench.report.model import MISSING_NOTE, Cell, CellRequest, Column, Row, Table
from cppo_bench.report.specs import Selector, TableSpec

RELIABILITY_DIR = "judge_reliability"
AVG_NOTE = "Avg. needs a value in every benchmark column of the row"


def external_cell(spec: TableSpec, row: Selector, model: str | None, bench: str) -> Cell | None:
    """The published cell a spec names for this row, model and benchmark, if any."""
    for ext in spec.external:
        if (ext.row, ext.model, ext.bench) == (row.label, model, bench):
            note = f"external: {ext.source}; a point estimate, left out of significance tests"
            if ext.spread is None:
                note += "; the source reports no uncertainty"
            return Cell(ext.value, ext.spread, "source", notes=[note])
    return None


def external_rows(spec: TableSpec, columns: list[Column]) -> list[Row]:
    """A spec's published cells (`report --study-numbers`) as rows of their own, one per
    row label, "LABEL (published: SOURCE)": never in the row of the user's own runs, and
    never averaged or tested (the Avg. and dagger passes skip rows without a selector)."""
    out = []
    for label in dict.fromkeys(ext.row for ext in spec.external):
        sel = next((r for r in spec.rows if r.label == label), None)
        cells = [
            (external_cell(spec, sel, c.meta["model"], c.meta["bench"]) if sel else None)
            or Cell(notes=["not published"])
            for c in columns
        ]
        sources = sorted({ext.source for ext in spec.external if ext.row == label})
        out.append(Row((f"{label} (published: {'; '.join(sources)})",), cells))
    return out


def add_average_columns(
    spec: TableSpec, engine: CellEngine, columns: list[Column], rows: list[Row]
) -> list[Column]:
    """One "Avg." column after each model's benchmark columns, per metric: trained rows
    average each seed over the benchmarks, then mean ± std over seeds; inference-only rows
    average the benchmark means, ± the combined bootstrap s.e. sqrt(sum s.e.^2) / n."""
    out: list[Column] = []
    new_cells: list[list[Cell]] = [[] for _ in rows]
    models = list(dict.fromkeys(c.meta["model"] for c in columns))
    for model in models:
        mine = [j for j, c in enumerate(columns) if c.meta["model"] == model]
        out += [columns[j] for j in mine]
        for metric in spec.columns.metrics:
            idx = [j for j in mine if columns[j].meta["_spec"] == metric]
            header = (columns[idx[0]].header[0], "Avg.", metric_label(metric))
            out.append(
                Column(header, metric_digits(metric), meta={**columns[idx[0]].meta, "bench": "avg"})
            )
            for r, (sel, row) in enumerate(zip(spec.rows, rows, strict=True)):
                new_cells[r].append(
                    _average(
                        spec, engine, sel, [columns[j] for j in idx], [row.cells[j] for j in idx]
                    )
                )
    # rebuild each row's cells in the new column order
    for r, row in enumerate(rows):
        by_col = {id(c): cell for c, cell in zip(columns, row.cells, strict=True)}
        extra = iter(new_cells[r])
        row.cells = [by_col[id(c)] if id(c) in by_col else next(extra) for c in out]
    return out


def _average(
    spec: TableSpec, engine: CellEngine, sel: Selector, cols: list[Column], cells: list[Cell]
) -> Cell:
    if any(c.value is None for c in cells) or not cells:
        return Cell(notes=[AVG_NOTE])
    if not sel.is_trained:
        spreads = [c.spread for c in cells if c.spread is not None]
        spread = None
        if len(spreads) == len(cells):  # (every cell has one)
            spread = math.sqrt(sum(s * s for s in spreads)) / len(cells)
        return Cell(float(np.mean([c.value for c in cells])), spread, "problems")
    per_bench = [
        engine.computed(spec, sel, c.meta["model"], c.meta["bench"], c.meta["_spec"]).per_seed
        for c in cols
    ]
    seeds = sorted(set.intersection(*(set(p) for p in per_bench)))
    scores = [
        [float(np.mean(list(p[s].values()))) for p in per_bench]
        for s in seeds
        if all(p[s] for p in per_bench)
    ]
    if not scores:
        return Cell(notes=[AVG_NOTE])
    ms = mean_std(np.mean(scores, axis=1)[:, None], trained=True)
    return Cell(ms.mean, ms.std if ms.n >= 2 else None, "seeds", n_seeds=ms.n)


def read_reliability(root: Path) -> dict[str, list[dict[str, str]]]:
    """`<runs>/judge_reliability/*.jsonl`: per line the judge's and two annotators' labels
    of one held-out item ({"judge": .., "annotator_a": .., "annotator_b": ..})."""
    out: dict[str, list[dict[str, str]]] = {}
    for path in sorted((root / RELIABILITY_DIR).glob("*.jsonl")):
        items = []
        for ln in userfiles.lines(path, userfiles.MAX_SMALL):
            n, line = ln.lineno, ln.text
            if line is None:
                raise DataError(f"{path}:{n}: {ln.error}")
            if not line.strip():
                continue
            try:
                item = jsonio.loads(line)
                items.append({k: str(item[k]) for k in ("judge", "annotator_a", "annotator_b")})
            except (ValueError, KeyError, TypeError) as exc:
                raise DataError(
                    f"{path}:{n}: needs judge, annotator_a, annotator_b ({exc})"
                ) from None
        out[path.stem] = items
    return out


_RELIABILITY_ROWS = (
    ("kappa", "Cohen's κ (inter-annotator)"),
    ("accuracy", "Classifier accuracy"),
    ("macro_f1", "Classifier macro-F1"),
    ("n_consensus", "Consensus items"),
    ("accepted", "Accepted (κ ≥ 0.6, macro-F1 ≥ 0.7)"),
)


@TABLE_KINDS.register("judge_reliability")
def build_judge_reliability(spec: TableSpec, engine: CellEngine) -> Table:
    from cppo_bench.diversity.reliability import judge_reliability

    files = read_reliability(engine.index.root)
    names = list(files) or ["(no annotations yet)"]
    columns = [Column((name,), 2, meta={"metric": "reliability"}) for name in names]
    rows = []
    for key, label in _RELIABILITY_ROWS:
        cells = []
        for name in names:
            items = files.get(name)
            if not items:
                cells.append(Cell(notes=[spec.fill or "no annotation file"]))
                continue
            rel = judge_reliability(
                *([i[k] for i in items] for k in ("judge", "annotator_a", "annotator_b"))
            )
            value = getattr(rel, key)
            cells.append(
                Cell(text="yes" if value else "no") if key == "accepted" else Cell(float(value))
            )
        rows.append(Row((label,), cells))
    return Table(
        spec.name,
        spec.title,
        spec.caption,
        ("Quantity",),
        columns,
        rows,
        list(spec.notes),
        spec.path,
    )


_CONSTRUCTS = (
    (r"lru_cache|\bdp\b|\bmemo", "DP / memoisation"),
    (r"heapq", "heap"),
    (r"deque|\bbfs\b", "BFS / queue"),
    (r"bisect|\blo\b.*\bhi\b", "binary search"),
    (r"sort\(|sorted\(", "sorting"),
    (r"\bdict\(|defaultdict|Counter|\{\}", "hash map"),
    (r"itertools\.(permutations|combinations|product)", "enumeration"),
    (r"\bwhile\b", "while loop"),
    (r"\bfor\b", "loops"),
)


def summarize_program(code: str) -> str:
    """A one-line summary of a program: its first comment, else the constructs it uses."""
    for line in code.splitlines():
        s = line.strip()
        if s.startswith("#") and len(s) > 3 and not s.startswith("#!"):
            return s.lstrip("# ")[:100]
    if not code.strip():
        return "(no program)"
    found = [name for pat, name in _CONSTRUCTS if re.search(pat, code)]
    lines = len([ln for ln in code.splitlines() if ln.strip()])
    return f"{lines} lines" + (f": {', '.join(found[:4])}" if found else "")


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "/")


@TABLE_KINDS.register("examples")
def build_examples(spec: TableSpec, engine: CellEngine) -> Table:
    k = spec.metric.k
    fields = ("plan", "program", "verdict", "D_alg category")
    columns = [Column((sel.label, f), 0, meta={"metric": f}) for sel in spec.rows for f in fields]
    rows = []
    problems, note = example_problems(spec, engine)
    benches = sorted({p.bench for p in problems})
    for prob in problems:
        for model in column_models_for(spec, engine, benches):
            per_method = [
                _attempts(spec, engine, sel, model, prob.bench, prob.problem_id, k)
                for sel in spec.rows
            ]
            for i in range(k):
                cells = [c for method in per_method for c in method[i]]
                labels = (
                    f"{bench_label(prob.bench)} {prob.problem_id}",
                    model_label(spec, model),
                    f"attempt {i + 1}",
                )
                rows.append(Row(labels, cells, {"model": model, "bench": prob.bench, "k": k}))
    return Table(
        spec.name,
        spec.title,
        spec.caption,
        ("Problem", "Model", "Attempt"),
        columns,
        rows,
        list(spec.notes) + ([note] if note else []),
        spec.path,
    )


def example_problems(spec: TableSpec, engine: CellEngine) -> tuple[list[Any], str | None]:
    """The spec's problems that some run at hand holds; when none is, the first problem (in
    the benchmark's own order, never chosen by outcome) shared by the runs of each benchmark
    the spec's rows have runs for, with a note saying so. The fixed ids of the study read
    'not in this run' for every study of one's own."""
    from cppo_bench.report.spec_extras import ExampleProblem

    runs = [r for r in engine.index.runs if any(r.matches(sel) for sel in spec.rows)]

    def held(bench: str, pid: str) -> bool:
        return any(r.manifest.bench == bench and pid in engine.index.records(r) for r in runs)

    if not runs or any(held(p.bench, p.problem_id) for p in spec.problems):
        return list(spec.problems), None  # an absent one's rows are empty: left out shown
    picked = []
    for bench in sorted({r.manifest.bench for r in runs}):
        mine = [r for r in runs if r.manifest.bench == bench]
        shared = set.intersection(*(set(engine.index.records(r)) for r in mine))
        order = max(mine, key=lambda r: len(r.manifest.problem_ids)).manifest.problem_ids
        first = next((pid for pid in order if pid in shared), None)
        if first is not None:
            picked.append(ExampleProblem(bench, first))
    note = (
        "None of the problems this spec fixes is in these runs: shown instead, per benchmark, "
        "the first problem in the benchmark's order that every run holds (never chosen by "
        "outcome)."
    )
    return picked, note


def column_models_for(spec: TableSpec, engine: CellEngine, benches: list[str]) -> list[str | None]:
    if spec.columns.models is not None:
        return list(spec.columns.models)
    return list(engine.index.models(benches)) or [None]


def _attempts(
    spec: TableSpec,
    engine: CellEngine,
    sel: Selector,
    model: str | None,
    bench: str,
    pid: str,
    k: int,
) -> list[list[Cell]]:
    """Per attempt: (plan, program summary, verdict, D_alg category) cells."""
    runs = engine.index.select(sel, model, bench, k)
    if not runs.by_seed:
        req = CellRequest(sel, model, bench, k, spec.expected_seeds(sel)[:1])
        return [
            [Cell(notes=[MISSING_NOTE], request=req)] + [Cell() for _ in range(3)] for _ in range(k)
        ]
    run = runs.by_seed[min(runs.by_seed)]
    rec = engine.index.records(run).get(pid)
    if rec is None:
        return [
            [Cell(notes=["the problem is not in this run"]) for _ in range(4)] for _ in range(k)
        ]
    branches = rec.branches[:k]
    texts = [b.plan or b.code or b.completion for b in branches]
    cats: list[str] | None = None
    if engine.judge is not None and texts:
        from cppo_bench.diversity import label_tuples

        kind = "plan" if any(b.plan for b in branches) else "code"
        cats = label_tuples([texts], engine.judge, kind).labels[0]  # type: ignore[arg-type]
    out = []
    for i in range(k):
        if i >= len(branches):
            out.append([Cell(notes=["the run has fewer attempts"]) for _ in range(4)])
            continue
        b = branches[i]
        cat = Cell(text=cats[i]) if cats else Cell(notes=["D_alg category: pass --judge-backend"])
        out.append(
            [
                Cell(text=_one_line(b.plan) or "—", runs=[str(run.path)]),
                Cell(text=_one_line(summarize_program(b.code))),
                Cell(text=f"{'✓' if b.passed else '✗'} {b.verdict}"),
                cat,
            ]
        )
    return out
