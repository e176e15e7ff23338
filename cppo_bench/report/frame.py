"""A report table as a pandas DataFrame: one row per cell (tidy), numbers unrounded. The
report's CSV files are this frame written by pandas (render.to_csv); the Python API hands
the same frame out (`cells_frame`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cppo_bench.report.model import Table

if TYPE_CHECKING:
    import pandas as pd

CSV_FIELDS = (
    "column", "model", "bench", "metric", "k", "seed", "value", "spread", "spread_over",
    "ci_low", "ci_high", "mark", "p_value", "n_seeds", "n_problems", "notes", "runs",
    "spread_kind", "n_total", "partial", "validity",
)  # fmt: skip


def row_fields(table: Table) -> list[str]:
    return ["row_" + h.lower().replace(" ", "_") for h in table.row_headers]


def cells_frame(table: Table) -> pd.DataFrame:
    """One row per cell: the row labels (`row_<header>` columns), then CSV_FIELDS; a
    missing value is None (object columns, so None never turns into NaN)."""
    import pandas as pd

    out = []
    for row in table.rows:
        for col, cell in zip(table.columns, row.cells, strict=True):
            meta = {**row.meta, **col.meta}
            ci = cell.interval or (None, None)
            out.append([
                *row.labels,
                " · ".join(col.header),
                meta.get("model"),
                meta.get("bench"),
                meta.get("metric") or meta.get("part") or meta.get("stat"),
                meta.get("k"),
                meta.get("seed"),
                cell.value if cell.text is None else cell.text,
                cell.spread,
                cell.spread_over,
                ci[0],
                ci[1],
                cell.mark,
                cell.p_value,
                cell.n_seeds or None,
                cell.n_problems or None,
                " | ".join(cell.notes),
                json.dumps(cell.runs) if cell.runs else None,
                cell.spread_kind,
                cell.n_total or None,
                int(cell.partial) if cell.n_problems else None,
                cell.validity or None,
            ])  # fmt: skip
    return pd.DataFrame(out, columns=[*row_fields(table), *CSV_FIELDS], dtype=object)
