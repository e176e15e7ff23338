"""Table renderers: Markdown (reading), LaTeX booktabs (papers), CSV (tools), HTML (the page).

All four print the same cells the same way: value ± spread, the significance mark, and
footnote letters (a, b, ...) whose texts follow the table. An empty cell stays empty and
carries its footnote; nothing is ever printed as a zero for lack of data.
"""

from __future__ import annotations

import html

from cppo_bench.report.compact import Labels, shared_label
from cppo_bench.report.escape import csv_cell, md
from cppo_bench.report.frame import CSV_FIELDS, cells_frame  # noqa: F401  (CSV_FIELDS: kept importable)
from cppo_bench.report.model import Cell, Column, Table, note_letter


def number(x: float, col: Column) -> str:
    if col.percent:
        return f"{100 * x:.{col.digits}f}%"
    return f"{x:+.{col.digits}f}" if col.signed else f"{x:.{col.digits}f}"


def cell_text(cell: Cell, col: Column, pm: str = "±", label: str | None = None) -> str:
    """The cell's number(s) without marks or footnotes ("" when empty). `label`: the part of
    the uncertainty label its table and row do not say already (report.compact.Labels);
    None: the whole label."""
    if cell.text is not None:
        return cell.text
    interval = (
        f"[{number(cell.interval[0], col)}, {number(cell.interval[1], col)}]"
        if cell.interval is not None
        else ""
    )
    if cell.value is None:
        return interval
    text = number(cell.value, col)
    if interval:  # the interval of the mean, in place of the ± (the CSV keeps both)
        text += f" {interval}"
    elif cell.spread is not None:
        spread = f"{cell.spread:.{col.digits}f}" if not col.percent else number(cell.spread, col)
        text += f" {pm} {spread}"
    label = cell_label(cell) if label is None else label
    return f"{text} ({label})" if label else text


def cell_label(cell: Cell) -> str:
    """What the ± is and what the number covers: 'bootstrap SE, n=2/32 partial, 1 seed'
    ('' for a cell that carries no counts, e.g. a hand-built or external one)."""
    from cppo_bench.report.compact import label_parts

    return ", ".join(v for v in label_parts(cell).values() if v)


def _labelled(table: Table) -> tuple[Table, Labels]:
    """The table as shown: its uncertainty labels said once where they can be (report.compact:
    above it, in a column header, after a row label), and where they are said."""
    labels = shared_label(table)
    return labels.present(table), labels


def _letters(table: Table) -> dict[str, str]:
    return {note: note_letter(i) for i, note in enumerate(table.footnotes())}


def header_levels(table: Table) -> tuple[list[tuple[str, ...]], list[str]]:
    """Column header levels to print, and the levels constant over all columns (dropped from
    the header and shown above it instead; when every level is constant, the innermost
    stays)."""
    if not table.columns:
        return [], []
    depth = len(table.columns[0].header)
    varying = [lvl for lvl in range(depth) if len({c.header[lvl] for c in table.columns}) > 1]
    keep = varying or [depth - 1]
    constant = [table.columns[0].header[lvl] for lvl in range(depth) if lvl not in keep]
    headers = [tuple(c.header[lvl] for lvl in keep) for c in table.columns]
    return headers, constant


def to_markdown(table: Table) -> str:
    table, labels = _labelled(table)
    letters = _letters(table)
    headers, constant = header_levels(table)
    out = [f"### {_md_escape(table.title)}", ""]
    if table.caption:
        out += [_md_escape(table.caption), ""]
    if constant:
        out += ["*" + _md_escape(" · ".join(constant)) + "*", ""]
    if labels.table_note():
        out += ["*" + _md_escape(labels.table_note()) + "*", ""]
    head = list(table.row_headers) + [" · ".join(h) for h in headers]
    out.append("| " + " | ".join(_md_escape(h) for h in head) + " |")
    out.append("|" + "---|" * len(table.row_headers) + "---:|" * len(headers))
    for i, row in enumerate(table.rows):
        texts = []
        for j, (col, cell) in enumerate(zip(table.columns, row.cells, strict=True)):
            own = labels.cell_label(i, j, cell)
            text = _md_cell(cell, col, own)
            marks = ",".join(letters[n] for n in cell.notes)
            texts.append(text + (f"<sup>{marks}</sup>" if marks else ""))
        out.append("| " + " | ".join([_md_escape(x) for x in row.labels] + texts) + " |")
    if not table.rows:
        out.append("| (no rows) |")
    out.append("")
    out += [f"<sup>{letter}</sup> {_md_escape(note)}  " for note, letter in letters.items()]
    out += [f"{_md_escape(n)}  " for n in table.notes]
    return "\n".join(out).rstrip() + "\n"


def _md_cell(cell: Cell, col: Column, label: str | None) -> str:
    """THE Markdown table cell: a text cell (a program's, a plan's, a verdict's text: data)
    is escaped; numbers, intervals, labels and marks are ours and written as they are."""
    raw = cell_text(cell, col, label=label)
    return (_md_escape(raw) if cell.text is not None else raw) + cell.mark


def _md_escape(text: str) -> str:
    return md(text)  # data from run manifests: shown as text, never as HTML or markup


_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_TEX_UNICODE = {
    "±": r"$\pm$",
    "†": r"$^{\dagger}$",
    "‡": r"$^{\ddagger}$",
    "Δ": r"$\Delta$",
    "−": r"$-$",
    "·": r"$\cdot$",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "×": r"$\times$",
    "→": r"$\rightarrow$",
    "ψ": r"$\psi$",
    "–": "--",
    "—": "---",
    "`": "",
}


def tex_escape(text: str) -> str:
    out = "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)
    for uni, tex in _TEX_UNICODE.items():
        out = out.replace(uni, tex)
    return out


def to_latex(table: Table) -> str:
    table, labels = _labelled(table)
    letters = _letters(table)
    headers, constant = header_levels(table)
    n_rh = len(table.row_headers)
    said = labels.table_note()
    title = table.title + (f" ({', '.join(constant)})" if constant else "")
    title += f" [{said}]" if said else ""
    caption = tex_escape(title) + (". " + tex_escape(table.caption) if table.caption else "")
    out = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{caption}}}",
        rf"\label{{tab:{table.name}}}",
        r"\begin{tabular}{" + "l" * n_rh + "c" * len(headers) + "}",
        r"\toprule",
    ]
    depth = len(headers[0]) if headers else 0
    for lvl in range(depth - 1):  # grouped upper header levels with cmidrules
        spans = _spans([h[: lvl + 1] for h in headers])
        cells = [""] * n_rh + [
            rf"\multicolumn{{{n}}}{{c}}{{{tex_escape(key[-1])}}}" if n > 1 else tex_escape(key[-1])
            for key, n in spans
        ]
        out.append(" & ".join(cells) + r" \\")
        rules, start = [], n_rh + 1
        for _, n in spans:
            if n > 1:  # a rule under a group of columns, none under a single one
                rules.append(rf"\cmidrule(lr){{{start}-{start + n - 1}}}")
            start += n
        if rules:
            out.append(" ".join(rules))
    last = [tex_escape(h) for h in table.row_headers] + [tex_escape(h[-1]) for h in headers]
    out += [" & ".join(last) + r" \\", r"\midrule"]
    for i, row in enumerate(table.rows):
        texts = []
        for j, (col, cell) in enumerate(zip(table.columns, row.cells, strict=True)):
            own = labels.cell_label(i, j, cell)
            text = tex_escape(cell_text(cell, col, label=own) + cell.mark)
            marks = ",".join(letters[n] for n in cell.notes)
            texts.append(text + (rf"\textsuperscript{{{marks}}}" if marks else ""))
        out.append(" & ".join([tex_escape(x) for x in row.labels] + texts) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    notes = [
        rf"\textsuperscript{{{letter}}}\,{tex_escape(note)}" for note, letter in letters.items()
    ] + [tex_escape(n) for n in table.notes]
    if notes:
        out += [
            r"\par\smallskip",
            r"\parbox{\linewidth}{\footnotesize " + r" \\ ".join(notes) + "}",
        ]
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


def _spans(keys: list[tuple[str, ...]]) -> list[tuple[tuple[str, ...], int]]:
    spans: list[tuple[tuple[str, ...], int]] = []
    for key in keys:
        if spans and spans[-1][0] == key:
            spans[-1] = (key, spans[-1][1] + 1)
        else:
            spans.append((key, 1))
    return spans


def to_csv(table: Table) -> str:
    """Tidy CSV: one line per cell, numbers unrounded, footnotes as text (the cells frame,
    written by pandas)."""
    frame = cells_frame(table)
    frame.columns = [csv_cell(c) for c in frame.columns]
    # no spreadsheet formula from data; floats as repr (unrounded)
    text = frame.map(lambda v: csv_cell("" if v is None else _csv_value(v)))
    return text.to_csv(index=False, lineterminator="\n")


def _csv_value(v: object) -> str:
    return repr(float(v)) if isinstance(v, float) else str(v)


def to_html(table: Table) -> str:
    """A <table> with multi-level headers plus its footnotes (for the report page)."""
    esc = html.escape
    table, labels = _labelled(table)
    letters = _letters(table)
    headers, constant = header_levels(table)
    depth = len(headers[0]) if headers else 1
    said = labels.table_note()
    out = ['<div class="table-wrap"><table class="report">', "<thead>"]
    for lvl in range(depth):
        cells = (
            [f'<th rowspan="{depth}" class="rowhead">{esc(h)}</th>' for h in table.row_headers]
            if lvl == 0
            else []
        )
        for key, n in _spans([h[: lvl + 1] for h in headers]):
            cells.append(f'<th colspan="{n}">{esc(key[-1])}</th>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</thead><tbody>")
    for i, row in enumerate(table.rows):
        cells = [f'<th class="rowhead">{esc(x)}</th>' for x in row.labels]
        for j, (col, cell) in enumerate(zip(table.columns, row.cells, strict=True)):
            text = esc(cell_text(cell, col, label=labels.cell_label(i, j, cell)))
            # a narrow window may break a cell before its ± or its label, never inside
            # a number and its spread ("0.139 ±&nbsp;0.030": the ± stays with the spread)
            text = text.replace(" ± ", " ±&nbsp;")
            if cell.mark:
                text += f'<span class="mark">{esc(cell.mark)}</span>'
            if cell.notes:
                text += "<sup>" + ",".join(letters[n] for n in cell.notes) + "</sup>"
            cls = ' class="empty"' if cell.empty else ""
            cells.append(f'<td{cls} title="{esc(_tooltip(cell))}">{text}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    if said:
        out.insert(0, f'<p class="constant">{esc(said)}</p>')
    if constant:
        out.insert(0, f'<p class="constant">{esc(" · ".join(constant))}</p>')
    if letters or table.notes:
        items = [f"<li><sup>{letter}</sup> {esc(note)}</li>" for note, letter in letters.items()]
        items += [f"<li>{esc(n)}</li>" for n in table.notes]
        out.append('<ul class="footnotes">' + "".join(items) + "</ul>")
    return "\n".join(out)


def _tooltip(cell: Cell) -> str:
    parts = []
    if cell.n_seeds:
        parts.append(f"{cell.n_seeds} seed(s)")
    if cell.n_problems:
        parts.append(f"{cell.n_problems} problems")
    if cell.spread_over:
        parts.append(f"± over {cell.spread_over}")
    if cell.validity:
        parts.append(cell.validity)
    if cell.p_value is not None:
        parts.append(f"p = {cell.p_value:.4f}")
    return ", ".join(parts)


RENDERERS = {"md": to_markdown, "tex": to_latex, "csv": to_csv}
