"""The study's published numbers, as tables of their own (`report --study-numbers`).

Each published table (package data ``published/study.yaml``, transcribed numbers only, the
source cited) becomes a Table whose rows are labelled "method · base model (published)" and
whose columns are the benchmarks as the study names them (LiveCodeBench-v6, not a run store's
LCB release), so a published number never sits under a heading the user's data made. Every
cell says where it comes from; a point estimate the study took from elsewhere says it has no
uncertainty. They are not runs: no significance test, no `--check` request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.report.model import Cell, Column, Row, Table

PUBLISHED = Path(__file__).resolve().parent / "published" / "study.yaml"
POINT_NOTE = "a single point estimate the study took from the model's released evaluation; no uncertainty reported"


def _cell(value: Any, where: str, source: str) -> Cell:
    if value is None:
        return Cell(notes=["not published"])
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise DataError(f"{PUBLISHED}: {where}: expected [value, std, mark]")
    mean, std, mark = (list(value) + [None, None])[:3]
    notes = [f"published: {source}"]
    if mark == "point":
        notes.append(POINT_NOTE)
    cell = Cell(float(mean), None if std is None else float(std), notes=notes)
    cell.mark = "†" if mark == "†" else ""
    return cell


def published_tables(path: Path = PUBLISHED) -> list[Table]:
    """The published tables, in the file's order (one DataError line for a malformed file)."""
    from cppo_bench.files.userfiles import UserFileError, load_yaml, read_text

    try:
        doc = load_yaml(read_text(path), str(path))
        source, tables = str(doc["source"]), list(doc["tables"])
    except (OSError, UserFileError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a published-numbers file ({exc})") from None
    out = []
    for t in tables:
        cite = f"{source}, {t['study_table']}"
        columns = [
            Column((f"{bench} (published)", str(t["metric"])), meta={"bench": bench})
            for bench in t["benches"]
        ]
        rows = [
            Row(
                (f"{r[0]} · {r[1]} (published)",),
                [_cell(v, f"{t['name']}: {r[0]} {r[1]}", cite) for v in r[2:]],
            )
            for r in t["rows"]
        ]
        title = f"Published numbers: {t['study_table']}"
        caption = (
            f"The study's own numbers ({cite}), shown as published for comparison: not "
            "computed from this run store, never in its columns, left out of significance tests. "
            "± as the study reports it (its variance rule); † its significance mark."
        )
        out.append(Table(str(t["name"]), title, caption, ("Method · base model",), columns, rows))
    return out
