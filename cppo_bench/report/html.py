"""reports/index.html: every table and figure on one self-contained page.

Offline by construction: CSS is inline, figures are embedded as base64 PNG (the PDFs are
linked relatively), no script and no external request. Run manifests are copied next to the
page (manifests/...) and linked relatively, so the folder can be moved or mailed whole.
"""

from __future__ import annotations

import base64
import html
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from cppo_bench.report.check import MissingRun
from cppo_bench.report.escape import shell_comment
from cppo_bench.report.figures import Figure
from cppo_bench.report.model import Table
from cppo_bench.report.render import to_html
from cppo_bench.report.run_index import RunRef

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;
margin:0 auto;max-width:1300px;padding:0 24px 48px}
h1{font-size:26px;margin:24px 0 4px}h2{font-size:19px;margin:36px 0 6px;border-bottom:1px solid
#ddd;padding-bottom:4px}p.meta{color:#555;margin:0 0 12px}nav{columns:3;font-size:13px;
background:#f6f7f9;padding:10px 16px;border-radius:6px}nav a{display:block}
.caption{color:#333;max-width:1000px}.constant{font-style:italic;color:#444;margin:4px 0}
.table-wrap{overflow-x:auto}table.report{border-collapse:collapse;margin:8px 0;font-size:13px;
font-variant-numeric:tabular-nums}table.report th,table.report td{padding:3px 9px;
white-space:nowrap}table.report thead th{border-bottom:1px solid #333;text-align:center}
table.report thead tr:first-child th{border-top:2px solid #333}table.report tbody tr:last-child
th,table.report tbody tr:last-child td{border-bottom:2px solid #333}th.rowhead{text-align:left;
font-weight:600}table.report td{text-align:right}td.empty{background:#fafafa}
.mark{color:#b00;font-weight:700}sup{color:#666}ul.footnotes{list-style:none;padding:0;
font-size:12px;color:#555;margin:4px 0}.downloads{font-size:12px;color:#555}
figure{margin:16px 0 28px}figure img{max-width:min(100%,900px);border:1px solid #eee}figcaption{
font-size:13px;color:#333}pre{background:#f6f7f9;padding:10px;overflow-x:auto;font-size:12px}
table.runs{border-collapse:collapse;font-size:12px}table.runs td,table.runs th{padding:2px 8px;
border-bottom:1px solid #eee;text-align:left}.warn{color:#8a4b00}
"""


@dataclass(frozen=True)
class PageInput:
    out: Path
    runs_root: Path
    tables: list[Table]
    figures: list[Figure]
    skipped_figures: list[str]
    missing: list[MissingRun]
    n_cells: int
    runs: list[RunRef]
    manifest_links: dict[Path, str]  # run dir -> manifest path relative to the page
    table_files: dict[str, list[str]]  # table name -> relative paths of md/tex/csv
    warnings: list[str]
    settings: dict[str, str]


def _anchor(name: str) -> str:
    return "t-" + "".join(ch if ch.isalnum() else "-" for ch in name)


def _figure_html(fig: Figure, out: Path) -> str:
    data = base64.b64encode(fig.png.read_bytes()).decode("ascii")
    pdf = os.path.relpath(fig.pdf, out)
    png = os.path.relpath(fig.png, out)
    return (
        f'<figure id="{_anchor(fig.name)}"><img alt="{html.escape(fig.title)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{html.escape(fig.caption)} '
        f'<a href="{html.escape(png)}">PNG</a> · <a href="{html.escape(pdf)}">PDF</a>'
        "</figcaption></figure>"
    )


def _runs_html(page: PageInput) -> str:
    esc = html.escape
    head = (
        "bench",
        "method",
        "model",
        "trained",
        "K",
        "seed",
        "options",
        "status",
        "records",
        "created",
        "manifest",
    )
    lines = [
        '<table class="runs"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
    ]
    for run in page.runs:
        m = run.manifest
        link = page.manifest_links.get(run.path)
        cells = [
            m.bench,
            m.method,
            m.model,
            run.trained or "",
            str(m.k),
            str(run.seed),
            json.dumps(m.method_options, sort_keys=True),
            m.status,
            f"{_record_count(run)} / {len(m.problem_ids)}",
            m.created_at,
        ]
        anchor = f'<a href="{esc(link)}">manifest.json</a>' if link else ""
        lines.append(
            "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + f"<td>{anchor}</td></tr>"
        )
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _record_count(run: RunRef) -> int:
    return run.record_count()


def render_page(page: PageInput) -> str:
    esc = html.escape
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    settings = " · ".join(f"{esc(k)} {esc(v)}" for k, v in page.settings.items())
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>cppo-bench report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>cppo-bench report</h1>",
        f'<p class="meta">Generated {now} from {len(page.runs)} run(s) in '
        f"<code>{esc(str(page.runs_root))}</code> · {settings}</p>",
        "<nav>"
        + "".join(f'<a href="#{_anchor(t.name)}">{esc(t.title)}</a>' for t in page.tables)
        + '<a href="#figures">Reward-model diagnostics</a><a href="#missing">Missing runs</a>'
        '<a href="#runs">Runs and manifests</a></nav>',
    ]
    for table in page.tables:
        files = " · ".join(
            f'<a href="{esc(p)}">{esc(Path(p).suffix[1:])}</a>'
            for p in page.table_files.get(table.name, [])
        )
        parts += [
            f'<h2 id="{_anchor(table.name)}">{esc(table.title)}</h2>',
            f'<p class="caption">{esc(table.caption)}</p>' if table.caption else "",
            to_html(table),
            f'<p class="downloads">{files} · spec <code>{esc(table.spec_path)}</code></p>',
        ]
        parts += [_figure_html(f, page.out) for f in page.figures if f.table == table.name]
    parts.append('<h2 id="figures">Reward-model diagnostics and skipped figures</h2>')
    diagnostics = [f for f in page.figures if f.table is None]
    parts += [_figure_html(f, page.out) for f in diagnostics]
    if not diagnostics:
        parts.append(
            "<p>No CPPO pipeline under the runs folder (<code>cppo-bench train cppo</code>"
            " writes <code>rm/val_scores.jsonl</code> and <code>joint/gate_log.jsonl</code>):"
            " no reward-model diagnostics.</p>"
        )
    if page.skipped_figures:
        parts.append(
            '<ul class="footnotes">'
            + "".join(f"<li>skipped: {esc(s)}</li>" for s in page.skipped_figures)
            + "</ul>"
        )
    parts.append('<h2 id="missing">Missing runs</h2>')
    filled = len({c for m in page.missing for c in m.cells})
    parts.append(
        f"<p>{filled} of {page.n_cells} table cells lack runs. Each command below "
        "fills the cells listed under it (also in <code>fill_missing.sh</code>).</p>"
    )
    if page.missing:
        body = "\n\n".join(
            m.command
            + "".join(f"\n    {shell_comment(c)}" for c in m.cells[:8])
            + (f"\n    # ... {len(m.cells) - 8} more" if len(m.cells) > 8 else "")
            for m in page.missing
        )
        parts.append(
            f"<details><summary>{len(page.missing)} command(s)</summary>"
            f"<pre>{esc(body)}</pre></details>"
        )
    parts += ['<h2 id="runs">Runs and manifests</h2>', _runs_html(page)]
    if page.warnings:
        parts.append(
            '<ul class="footnotes warn">'
            + "".join(f"<li>{esc(w)}</li>" for w in page.warnings)
            + "</ul>"
        )
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"
