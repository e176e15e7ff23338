"""What a small study's report leaves out by default (`report --show-empty` keeps it all):
rows and columns whose every cell is empty, and each cell's repeated uncertainty label.

A study with a few runs filled about 40 % of the shipped specs' cells; the rest were empty
rows and columns that pushed the page past a 1,400 px window and hid the numbers. The
uncertainty's name ('bootstrap SE', 'sd over seeds') and, where every cell shares it, the
coverage ('n=32, 3 seeds') are said once per table (`shared_label`); a cell keeps only what
differs from its neighbours. The CSV keeps every field on every line either way.
"""

from __future__ import annotations

import dataclasses

from cppo_bench.report.model import Cell, Table


def _is_blank(cell: Cell) -> bool:
    """No number, no text: an empty cell, whatever footnote says why."""
    return cell.empty


def prune(table: Table) -> Table:
    """`table` without the rows and the columns in which every cell is empty (the table
    keeps its rows' order; a table with no number at all keeps no row)."""
    keep_cols = [
        j for j in range(len(table.columns)) if any(not _is_blank(r.cells[j]) for r in table.rows)
    ]
    rows = []
    for row in table.rows:
        cells = [row.cells[j] for j in keep_cols]
        if any(not _is_blank(c) for c in cells):
            rows.append(dataclasses.replace(row, cells=cells))
    columns = [table.columns[j] for j in keep_cols]
    return dataclasses.replace(table, columns=columns, rows=rows)


PARTS = ("kind", "n", "seeds")  # what the ± is; problems covered; seeds averaged


def label_parts(cell: Cell) -> dict[str, str | None]:
    """A numeric cell's label, by part: kind ('bootstrap SE'), n ('n=2/32 partial'),
    seeds ('3 seeds'); None for a part the cell has not."""
    from cppo_bench.metrics.uncertainty import KIND_TAGS, is_partial

    kind = KIND_TAGS.get(cell.spread_kind or "") if cell.spread is not None else None
    if cell.interval_kind and cell.value is not None:  # shown in place of the ±
        kind = cell.interval_kind
    n = None
    if cell.n_problems:
        n = f"n={cell.n_problems}"
        if is_partial(cell.n_problems, cell.n_total):
            n = f"n={cell.n_problems}/{cell.n_total} partial"
    seeds = f"{cell.n_seeds} seed{'s' if cell.n_seeds != 1 else ''}" if cell.n_seeds else None
    return {"kind": kind, "n": n, "seeds": seeds}


def _numeric(cells: list[Cell]) -> list[Cell]:
    return [c for c in cells if c.value is not None and c.text is None]


def _common(cells: list[Cell]) -> dict[str, str]:
    """The parts the numeric cells of `cells` that have them have alike (a derived cell, e.g.
    pass@K per 10k tokens, has no n of its own and does not keep the others' from being
    said once)."""
    out: dict[str, str] = {}
    labels = [label_parts(c) for c in _numeric(cells)]
    for part in PARTS:
        values = {v for p in labels if (v := p[part]) is not None}
        if len(values) == 1:
            out[part] = values.pop()
    return out


class Labels:
    """Where each part of the cells' labels is said: once above the table when every cell
    shares it; else n (it follows the benchmark) in the column's header and the kind and
    seeds (they follow the method) after the row's label, when that column or row shares
    it; else in the cell."""

    def __init__(self, table: Table) -> None:
        self.table_parts = _common([c for _, _, c in table.cells()])
        self.col_parts: list[dict[str, str]] = []
        for j in range(len(table.columns)):
            mine = _common([r.cells[j] for r in table.rows])
            self.col_parts.append(
                {"n": mine["n"]} if "n" in mine and "n" not in self.table_parts else {}
            )
        self.row_parts: list[dict[str, str]] = []
        for row in table.rows:
            mine = _common(row.cells)
            self.row_parts.append(
                {p: mine[p] for p in ("kind", "seeds") if p in mine and p not in self.table_parts}
            )

    def table_note(self) -> str:
        """'± is bootstrap SE; every cell: n=32, 3 seeds' ('' when nothing is shared)."""
        t = self.table_parts
        said = []
        if "kind" in t:  # an interval's tag says what it is itself
            said.append(t["kind"] if t["kind"].startswith("in brackets") else f"± is {t['kind']}")
        cover = ", ".join(t[p] for p in ("n", "seeds") if p in t)
        if cover:
            said.append(f"every cell: {cover}")
        return "; ".join(said)

    def row_note(self, i: int) -> str:
        r = self.row_parts[i]
        return ", ".join(r[p] for p in PARTS if p in r)

    def column_note(self, j: int) -> str:
        return self.col_parts[j].get("n", "")

    def cell_label(self, i: int, j: int, cell: Cell) -> str:
        said = {**self.table_parts, **self.col_parts[j], **self.row_parts[i]}
        return ", ".join(v for p, v in label_parts(cell).items() if v and said.get(p) != v)

    def present(self, table: Table) -> Table:
        """`table` with the row and column notes in its row labels and innermost headers."""
        columns = [
            dataclasses.replace(c, header=(*c.header[:-1], f"{c.header[-1]} ({note})"))
            if (note := self.column_note(j)) and c.header
            else c
            for j, c in enumerate(table.columns)
        ]
        rows = [
            dataclasses.replace(r, labels=(*r.labels[:-1], f"{r.labels[-1]} ({note})"))
            if (note := self.row_note(i)) and r.labels
            else r
            for i, r in enumerate(table.rows)
        ]
        return dataclasses.replace(table, columns=columns, rows=rows)


def shared_label(table: Table) -> Labels:
    return Labels(table)


def table_label(table: Table) -> str:
    return Labels(table).table_note()
