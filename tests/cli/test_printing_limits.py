"""Printing and quoting (docs/untrusted-inputs.md): every human view clips each LINE at the
one printer (`termsafe.clip_lines`, in `echo` and the rich console's `render_str`), a bad
value is quoted by one helper (`termsafe.quote`, at most a few hundred characters), and
machine output (`--json`) is written whole. The walk fails on a rich renderable built from
data that would reach the terminal without passing the printer."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest
from code_walk import dotted
from run_scripted import ScriptedBackend, invoke

import cppo_bench as cb
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.store.runs import iter_runs
from cppo_bench.util import termsafe

ROOT = Path(__file__).resolve().parents[2]
HUGE = 3_000_000


@pytest.fixture
def huge_run(tmp_path) -> Path:
    """A run whose every attempt is one line of 3,000,000 characters."""
    demo = load_benchmark("demo").problems
    line = "x = 1; " * (HUGE // 7)
    backend = ScriptedBackend(demo, respond=lambda req: f"```python\n{line}\n```")
    cb.run("direct", "demo", backend=backend, k=2, limit=2, out=tmp_path)
    (run_dir,) = iter_runs(tmp_path)
    return run_dir


@pytest.mark.parametrize("full", [False, True])
def test_samples_clips_a_one_line_program(huge_run, full):
    args = ["samples", "--run", str(huge_run), *(["--full"] if full else [])]
    start = time.perf_counter()
    out = invoke(args)
    took = time.perf_counter() - start
    assert out.exit_code == 0, out.output[-2000:]
    assert len(out.output) < 200_000  # 4 programs of 3 MB each: a few screens, not 12 MB
    assert "(2997996 more" in out.output and "characters)" in out.output  # (a narrow cell folds)
    assert max(map(len, out.output.splitlines())) < 3 * termsafe.LINE_CHARS
    assert took < 60, took
    # machine output is whole: a program reads the JSON back exactly
    rows = [json.loads(x) for x in invoke([*args, "--json"]).output.splitlines()]
    assert all(len(a["code"]) > HUGE - 10 for r in rows for a in r["attempts"])


def test_echo_and_the_console_clip_every_line(capsys):
    termsafe.echo("a" * 10_000 + "\nshort", lines=True)
    termsafe.console(width=100).print("b" * 10_000, soft_wrap=True)
    out = capsys.readouterr().out
    assert "a" * termsafe.LINE_CHARS + "... (8000 more characters)" in out
    assert "b" * 10_000 not in out and "short" in out
    termsafe.echo("c" * 10_000, whole=True)
    assert "c" * 10_000 in capsys.readouterr().out


@pytest.mark.parametrize("value", ["d" * 2_000_000, b"e" * 2_000_000, ["f"] * 500_000])
def test_quote_holds_a_few_hundred_characters(value):
    text = termsafe.quote(value)
    assert len(text) < termsafe.QUOTE_CHARS + 40 and "more)" in text
    assert termsafe.quote("ok") == "'ok'"


# rich renderables that print their text without Console.render_str (so unclipped)
RAW_RENDERABLES = {"Text", "Syntax", "Markdown", "Pretty", "JSON", "Text.from_markup",
                   "Text.assemble", "Text.from_ansi"}  # fmt: skip


def raw_renderables(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            parts = name.split(".")
            if {parts[-1], ".".join(parts[-2:])} & RAW_RENDERABLES and parts[0] not in (
                "json", "pd", "np"
            ):  # fmt: skip
                found.append((node.lineno, name))
    return found


def test_no_human_view_prints_around_the_one_printer() -> None:
    offenders = []
    for path in sorted([*(ROOT / "cppo_bench").rglob("*.py"), *(ROOT / "trainers").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "cppo_bench/util/termsafe.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{rel}:{line}: {name}" for line, name in raw_renderables(tree)]
    assert not offenders, "print str through termsafe (its console clips lines):\n" + "\n".join(
        offenders
    )


def test_the_walk_sees_each_way_around() -> None:
    code = "Text(s)\nrich.syntax.Syntax(code, 'python')\nText.from_markup(x)\nMarkdown(m)\n"
    assert len(raw_renderables(ast.parse(code))) == 4
    assert raw_renderables(ast.parse("json.dumps(x)\nconsole.print(s)\n")) == []


def repr_in_messages(tree: ast.AST) -> list[int]:
    """f-string `{x!r}`: a whole repr of a value (a 2 MB field quoted whole in a skip line)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FormattedValue) and node.conversion == ord("r")
    ]


def test_every_bad_value_is_quoted_by_the_one_helper() -> None:
    offenders = []
    for path in sorted([*(ROOT / "cppo_bench").rglob("*.py"), *(ROOT / "trainers").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        # termsafe.quote itself; the sandboxed child imports nothing of the package
        if rel == "cppo_bench/util/termsafe.py" or rel.startswith("cppo_bench/verifier/inside/"):
            continue
        offenders += [f"{rel}:{n}" for n in repr_in_messages(ast.parse(path.read_text("utf-8")))]
    assert not offenders, "quote values with termsafe.quote:\n" + "\n".join(offenders)
    assert repr_in_messages(ast.parse("f'{x!r}'\nf'{y!r:.60}'\nf'{quote(z)}'\n")) == [1, 2]


def test_a_logged_warning_is_clipped_too(caplog):
    import logging

    with caplog.at_level(logging.WARNING):
        termsafe.warn(logging.getLogger("t"), "x" * 1_000_000)
        termsafe.warn(logging.getLogger("t"), "%s", "y" * 1_000_000)
    assert all(len(r.getMessage()) < 3 * termsafe.LINE_CHARS for r in caplog.records)
