"""The computed form of a table, shared by every renderer: rows of cells under (possibly
multi-level) column headers, with footnotes attached to cells as plain text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cppo_bench.report.specs import Selector

MISSING_NOTE = "no stored run: `cppo-bench report --check` prints the command that fills this cell"


@dataclass(frozen=True)
class CellRequest:
    """What a cell needs from the run store: --check turns it into `cppo-bench run` commands."""

    row: Selector
    model: str | None
    bench: str
    k: int
    missing_seeds: tuple[int, ...]
    derive: bool = False  # a run with more attempts than k would fill it too


@dataclass
class Cell:
    value: float | None = None
    spread: float | None = None  # the ± part (sample std); None when not defined
    spread_over: str | None = None  # "seeds" | "problems"
    interval: tuple[float, float] | None = None  # shown as [low, high] instead of a value
    mark: str = ""  # significance mark (dagger)
    p_value: float | None = None
    notes: list[str] = field(default_factory=list)  # footnote texts
    n_seeds: int = 0
    n_problems: int = 0
    runs: list[str] = field(default_factory=list)  # run directories the cell was computed from
    request: CellRequest | None = None  # set when runs are missing (the whole cell or seeds)
    text: str | None = None  # a text cell (qualitative examples) instead of a number
    spread_kind: str | None = None  # what the ± is: "seed_std" | "bootstrap_se"
    n_total: int = 0  # the benchmark's full evaluation set (0: unknown); n_problems < it: partial
    validity: str = ""  # the method's tuple validity / fallbacks ("" for plan-less methods)
    interval_kind: str | None = None  # what `interval` is, when shown beside a value

    @property
    def partial(self) -> bool:
        return 0 < self.n_problems < self.n_total

    @property
    def empty(self) -> bool:
        return self.value is None and self.interval is None and self.text is None


@dataclass(frozen=True)
class Column:
    header: tuple[str, ...]  # header levels, outermost first (e.g. model, benchmark, metric)
    digits: int = 3
    signed: bool = False  # print a leading + on positive values (differences)
    percent: bool = False  # value is a share, printed as a percentage
    meta: dict[str, Any] = field(default_factory=dict)  # model, bench, metric, k (for CSV)


@dataclass
class Row:
    labels: tuple[str, ...]
    cells: list[Cell]
    meta: dict[str, Any] = field(default_factory=dict)  # model, bench of rows that carry them


@dataclass
class Table:
    name: str
    title: str
    caption: str
    row_headers: tuple[str, ...]
    columns: list[Column]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)  # table-level notes, below the footnotes
    spec_path: str = ""

    def cells(self) -> list[tuple[Row, Column, Cell]]:
        return [
            (row, col, cell)
            for row in self.rows
            for col, cell in zip(self.columns, row.cells, strict=True)
        ]

    def footnotes(self) -> list[str]:
        """Distinct cell notes in order of first appearance (row-major): a, b, c, ..."""
        seen: dict[str, None] = {}
        for _, _, cell in self.cells():
            for note in cell.notes:
                seen.setdefault(note, None)
        return list(seen)


def note_letter(i: int) -> str:
    """a..z, then aa, ab, ... for footnote i (0-based)."""
    letters = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return letters
