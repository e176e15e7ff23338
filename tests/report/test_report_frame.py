"""A report table's cells as a DataFrame, and its CSV written from that frame by pandas: the
bytes the standard library's csv.writer gives for the same cells (the writer the CSV files
came from before pandas), on cells with commas, quotes, line breaks, formula-like text,
missing values and unrounded floats."""

from __future__ import annotations

import csv
import io
import json

from cppo_bench.report.frame import CSV_FIELDS, cells_frame
from cppo_bench.report.model import Cell, Column, Row, Table
from cppo_bench.report.render import to_csv


def table() -> Table:
    cols = [
        Column(("org/Model, A", "apps", "pass@4"), meta={"model": "org/Model, A", "bench": "apps",
               "metric": "pass@k", "k": 4}),
        Column(("qualitative",), meta={"stat": "text"}),
    ]  # fmt: skip
    rows = [
        Row(("cppo", "=SUM(A1)"), [
            Cell(value=0.1 + 0.2, spread=0.0123456789, spread_over="seeds", n_seeds=3,
                 n_problems=30, n_total=32, spread_kind="seed_std", mark="†", p_value=0.01,
                 notes=['a "quoted" note', "second"], runs=["runs/a", "runs/b"],
                 validity="valid 3/4"),
            Cell(text='line one\nline "two", with comma'),
        ]),
        Row(("direct", "-0.5"), [Cell(notes=["no stored run"]), Cell(interval=(-0.25, 0.5))]),
    ]  # fmt: skip
    return Table("t", "T", "c", ("Method", "Note text"), cols, rows)


def test_cells_frame_is_one_row_per_cell_with_raw_values():
    frame = cells_frame(table())
    assert list(frame.columns) == ["row_method", "row_note_text", *CSV_FIELDS]
    assert len(frame) == 4
    first = frame.iloc[0]
    assert first["value"] == 0.1 + 0.2 and first["k"] == 4 and first["n_seeds"] == 3
    assert json.loads(first["runs"]) == ["runs/a", "runs/b"] and first["partial"] == 1
    assert frame.iloc[2]["value"] is None and frame.iloc[2]["notes"] == "no stored run"
    assert (frame.iloc[3]["ci_low"], frame.iloc[3]["ci_high"]) == (-0.25, 0.5)


def test_csv_is_what_csv_writer_writes_for_the_cells():
    t = table()
    frame = cells_frame(t)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")

    def guard(s: str) -> str:  # what a spreadsheet would evaluate gets a leading '
        return "'" + s if s[:1] and s[:1] in "=+-@\t\r" and not _number(s) else s

    writer.writerow([guard(c) for c in frame.columns])
    for values in frame.itertuples(index=False):
        writer.writerow(
            [
                guard("" if v is None else repr(v) if isinstance(v, float) else str(v))
                for v in values
            ]
        )
    assert to_csv(t) == buf.getvalue()
    assert "'=SUM(A1)" in to_csv(t) and ",-0.5," in to_csv(t)  # a number is not a formula


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
