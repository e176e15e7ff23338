"""What the tool writes and prints from data (issue 27, items 1, 6 and 9): no byte of data
reaches generated shell code unquoted, a spreadsheet formula, live HTML or the terminal's
control sequences."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.cli import main
from cppo_bench.report.escape import UnsafeName, csv_cell, md, shell_arg, shell_comment
from cppo_bench.report.model import Cell, Column, Row, Table
from cppo_bench.report.render import to_csv, to_markdown
from cppo_bench.util.termsafe import console, markup, safe

HOSTILE = "m$(touch PWNED1)`touch PWNED2`\"; touch PWNED3 #'<script>alert(1)</script>"


def fake_cli(bin_dir: Path, log: Path) -> None:
    """A `cppo-bench` that only records the arguments it was given."""
    bin_dir.mkdir()
    exe = bin_dir / "cppo-bench"
    exe.write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


def test_fill_missing_sh_passes_hostile_names_as_single_arguments(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    for model in (HOSTILE, "m2\ntouch PWNED4\n#"):  # a newline would end a comment
        _write(runs, Plant("direct", model, "demo", 0, [[False] * 4] * N,
                           planner=[0] * N, solver=[0] * N))  # fmt: skip
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    script = (out / "fill_missing.sh").read_text()
    assert HOSTILE.split("$")[0] in script
    log = tmp_path / "argv.jsonl"
    fake_cli(tmp_path / "bin", log)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(out / "fill_missing.sh")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not [p for p in tmp_path.rglob("PWNED*")]  # nothing ran
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    models = {argv[argv.index("--model") + 1] for argv in calls if "--model" in argv}
    assert HOSTILE in models  # the name arrived whole, as one argument
    assert "PWNED4" not in script  # its run was refused on read (control character in model)
    assert "model': holds a control character" in result.output
    # the page's copy of the commands and missing.md show it as text
    assert "<script>" not in (out / "index.html").read_text()
    assert "<script>" not in (out / "report.md").read_text()
    missing = (out / "missing.md").read_text()
    assert missing.startswith("```") and missing.rstrip().endswith("```")


def test_names_with_control_characters_never_reach_a_command():
    for name in ("a\nrm -rf ~", "a\rb", "a\x1b[2J", "a\u2028b", "a\x00b"):
        with pytest.raises(UnsafeName):
            shell_arg(name)
        assert "\n" not in shell_comment(f"cell {name}")
    assert shell_arg("it's $(x)") == "'it'\"'\"'s $(x)'"


def test_markdown_shows_html_and_pipes_of_data_as_text():
    cols = [Column(("<img src=x onerror=alert(1)>", "pass@4"), meta={"model": "m"})]
    rows = [Row(("<script>alert(1)</script> | [x](javascript:alert(1))",), [Cell(0.5)])]
    text = to_markdown(Table("t", "<b>title</b>", "cap <i>", ("Method",), cols, rows, ["<u>n"]))
    assert "<script>" not in text and "<img" not in text and "<b>" not in text
    assert "<u>" not in text and not re.search(r"(?<!\\)\]\(javascript", text)  # no link
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| \\[x\\]" in text
    assert md("a\x1bb") == "a\\\\x1bb"  # renders as a\\x1bb: the escape, shown


def test_csv_cells_that_a_spreadsheet_would_evaluate_are_neutralised():
    cols = [Column(('=HYPERLINK("http://x")',), meta={"model": "@SUM(A1)", "k": 4})]
    rows = [Row(("+cmd|' /C calc'!A0",), [Cell(-0.25)]), Row(("\t=1+1",), [Cell(0.5)])]
    parsed = list(csv.reader(io.StringIO(to_csv(Table("t", "T", "", ("Method",), cols, rows)))))
    cells = [c for line in parsed[1:] for c in line]
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")]
    assert "'+cmd|' /C calc'!A0" in cells and '\'=HYPERLINK("http://x")' in cells
    assert "-0.25" in cells  # a negative number stays a number
    assert csv_cell("-x") == "'-x" and csv_cell("-1e3") == "-1e3" and csv_cell("a=b") == "a=b"


def test_terminal_text_from_data_is_escaped():
    evil = "id\x1b]0;owned\x07\x1b[2J\r\u202eX\x9b31m[/]"
    assert "\x1b" not in safe(evil) and "\r" not in safe(evil) and "\u202e" not in safe(evil)
    assert "\x9b" not in safe(evil) and "\x07" not in safe(evil)
    buf = io.StringIO()
    con = console(file=buf, force_terminal=True, width=200)
    con.print(f"[bold]run[/bold] {evil}")  # broken markup from data: printed, never raised
    con.print(f"[bold]run[/bold] {markup(evil)}")
    from rich.table import Table as RichTable

    table = RichTable("id")
    table.add_row(evil)
    con.print(table)
    shown = buf.getvalue()
    assert "\x1b]" not in shown and "\x1b[2J" not in shown and "\x07" not in shown
    assert "\\x1b" in shown and "[/]" in shown


def test_cli_prints_hostile_record_ids_escaped(tmp_path):
    path = tmp_path / "cc.jsonl"
    rec = {"name": "1_A\x1b[2J\x1b]0;owned\x07[/]. x", "description": ""}
    path.write_text(json.dumps(rec) + "\n" + json.dumps({"name": "[bold red]2_B. y"}) + "\n")
    out = CliRunner().invoke(main, ["data", "show", "--bench", "codecontests", "--data",
                                    str(path)])  # fmt: skip
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert "\x1b" not in out.output and "\x07" not in out.output
    assert "\\x1b[2J" in out.output
    assert len(out.stderr.strip().splitlines()) == 1  # one line, no forged ones
