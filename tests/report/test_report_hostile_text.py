"""What a stranger's store holds never acts in what the report writes or what the commands
read (docs/untrusted-inputs.md): a `<script>` in a program reaches report.md only as text
(escaped at the one Markdown cell writer), fill_missing.sh runs nothing but cppo-bench
commands whatever a stored model name holds (each line checked by `escape.shell_command`),
and a run folder whose name is not UTF-8 is one line naming it, the good runs still shown."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest
from click.testing import CliRunner
from report_plant import N, Plant, _write

import cppo_bench as cb
from cppo_bench.cli import main
from cppo_bench.errors import UnsafeName
from cppo_bench.report.escape import shell_command
from cppo_bench.report.model import Cell, Column, Row, Table
from cppo_bench.report.render import to_markdown
from cppo_bench.store.runs import iter_runs

SCRIPT = "<script>alert(1)</script>"


def test_a_program_cell_reaches_markdown_as_text():
    cells = [Cell(text=f"def f(): return '{SCRIPT}' | `x` [a](b)")]
    table = Table("t", "T", "", row_headers=("row",), columns=[Column(header=("c",))],
                  rows=[Row(labels=(SCRIPT,), cells=cells)])  # fmt: skip
    md = to_markdown(table)
    assert "<script" not in md and "&lt;script&gt;" in md
    assert "\\|" in md and "\\`x\\`" in md  # a pipe cannot open a column, a backtick code


HOSTILE_MODELS = [
    "org/m$(touch PWNED)",
    "org/m`touch PWNED`",
    "org/m'; touch PWNED; echo '",
    "org/m && touch PWNED",
    "org/m > PWNED",
    '--out=/tmp/x"; touch PWNED; "',
]


@pytest.mark.parametrize("model", HOSTILE_MODELS)
def test_fill_missing_runs_only_cppo_bench_whatever_the_model_name(tmp_path, model):
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", model, "demo", 0, [[False] * 4] * N,
                       planner=[0] * N, solver=[0] * N))  # fmt: skip
    out = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    script = tmp_path / "r" / "fill_missing.sh"
    commands = [x for x in script.read_text().splitlines() if x and not x.startswith(("#", "set"))]
    assert commands and all(x.startswith("cppo-bench run ") for x in commands)
    # run it, with a stand-in cppo-bench that records its arguments
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "cppo-bench"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" >> "$LOG"\nprintf "%s\\n" --- >> "$LOG"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(tmp_path / "log")}
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob("PWNED"))  # nothing but cppo-bench ran
    words = (tmp_path / "log").read_text().split("\n")
    assert words.count("---") == len(commands)
    assert model in words  # the name arrived as one argument, verbatim


@pytest.mark.parametrize(
    "line",
    ["cppo-bench run --model x; touch P", "cppo-bench run --model $(id)", "rm -rf ~",
     "cppo-bench run --model 'a\nb'", "cppo-bench run --model `id`", "cppo-bench run 'x"],
)  # fmt: skip
def test_the_command_check_refuses_anything_but_quoted_words(line):
    with pytest.raises(UnsafeName):
        shell_command(line)
    assert (
        shell_command("cppo-bench run --model 'a b' --k 4") == "cppo-bench run --model 'a b' --k 4"
    )


def test_a_run_folder_not_utf8_is_one_line_and_the_good_runs_show(tmp_path):
    runs = tmp_path / "runs"
    for seed in (0, 1):
        _write(runs, Plant("direct", "org/M", "demo", seed, [[seed == 0] * 4] * N,
                           planner=[0] * N, solver=[0] * N))  # fmt: skip
    bad = sorted(iter_runs(runs))[1]
    os.rename(bad, os.path.join(os.fsencode(str(bad.parent)), b"k4-\xff\xfe-run"))
    for args in (["stats", "passk", "--runs", str(runs), "--k", "4"],
                 ["report", "--runs", str(runs), "--out", str(tmp_path / "r")],
                 ["runs", "--out", str(runs)]):  # fmt: skip
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0, out.output
        assert "Traceback" not in out.output and "codec" not in out.output
        assert "k4-\\udcff\\udcfe-run" in out.output and "not UTF-8" in out.output, out.output
    frame = cb.load_runs(runs)
    assert len(frame) == N and "\udcff" not in str(frame.to_dict())  # one run, per problem
