"""The study's published tables (issue 45 item 5): each number is the study's own, checked
against its LaTeX source, and sits in a labelled row and a column named for the study's
benchmark, never a run store's."""

from __future__ import annotations

import re

import pytest

from cppo_bench.report.published import published_tables


def test_published_tables_name_their_benchmark_and_source():
    tables = {t.name: t for t in published_tables()}
    assert set(tables) == {"published_main", "published_gemma"}
    for t in tables.values():
        assert all(c.header[0].endswith("(published)") for c in t.columns)
        assert all(r.labels[0].endswith("(published)") for r in t.rows)
        for r in t.rows:
            for cell in r.cells:
                assert cell.request is None and "published: CPPO study" in cell.notes[0]
    main = tables["published_main"]
    heads = [c.header[0] for c in main.columns]
    assert heads == ["APPS (published)", "CodeContests (published)",
                     "LiveCodeBench-v6 (published)"]  # fmt: skip


@pytest.mark.needs_shared
def test_every_published_number_is_the_studys(shared_data):
    study = shared_data.parent / "study" / "000_8f87340a21dda988.txt"
    if not study.is_file():
        pytest.skip(f"the study's source is not at {study}")
    text = study.read_text()
    for t in published_tables():
        label = {"published_main": "tab:main", "published_gemma": "tab:gemma"}[t.name]
        body = text[text.index(f"\\label{{{label}}}") :]
        body = body[: body.index("\\end{tabular}")]
        # every number of the LaTeX table, in order: value, then its \std{...}
        source = [float(x) for x in re.findall(r"\d\.\d{3}", body)]
        cells = [list(r.cells) for r in t.rows]
        if t.name == "published_gemma":  # the study: one line per method, E2B/E4B per bench
            cells = [[a[0], b[0], a[1], b[1]] for a, b in zip(cells[::2], cells[1::2], strict=True)]
        ours = [x for row in cells for c in row for x in (c.value, c.spread) if x is not None]
        assert ours == source, t.name
