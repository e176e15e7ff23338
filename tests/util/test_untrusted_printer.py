"""Door 1 of docs/untrusted-inputs.md, text to the terminal: `cppo_bench/util/termsafe.py` is the
one printer. The walk below fails when code anywhere in the package or the trainers writes
to the terminal another way (print, click.echo / secho, sys.stdout / sys.stderr.write,
logging calls, a rich Console not built by termsafe); the escaping itself is checked by
Unicode category against `unicodedata`, an oracle independent of our code."""

from __future__ import annotations

import ast
import sys
import unicodedata
from pathlib import Path

import pytest
from code_walk import dotted as _dotted
from code_walk import sources as _sources

from cppo_bench.util.termsafe import console, echo, json_line, markup, safe

ROOT = Path(__file__).resolve().parents[2]
PRINTER = "cppo_bench/util/termsafe.py"
# Deliberate exceptions, each with why (path, the call's dotted name).
ALLOWED = {
    # the sandboxed child writes a program's own SystemExit text into the captured stderr
    # pipe of that program, which the verifier reads as data, never to a terminal
    ("cppo_bench/verifier/inside/child.py", "sys.stderr.write"),
    # input()'s prompt, written to the program's own captured stdout (a memfd the verifier
    # judges), never to a terminal
    ("cppo_bench/verifier/inside/child.py", "sys.stdout.write"),
    # the maintainer's script that builds the shipped demo file: prints a count and its own
    # output path, never data from elsewhere
    ("cppo_bench/benchmarks/build_demo_train.py", "print"),
}
LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
LOGGER_NAMES = {"log", "logger", "_log", "LOG", "logging", "_logger"}


def _is_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant)


def _bar_text(node: ast.Call) -> ast.AST | None:
    if _dotted(node.func).endswith("add_task") and node.args:
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg == "description"), None)


def _escaped(node: ast.AST) -> bool:
    """A literal, or a call of termsafe's markup / safe."""
    return _is_literal(node) or (isinstance(node, ast.Call)
                                 and _dotted(node.func) in ("markup", "safe"))  # fmt: skip


def printing_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each call that writes to a terminal other than through termsafe."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("rich.console", "rich"):
            for alias in node.names:
                if alias.name in ("Console", "print", "get_console"):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        parts = name.split(".")
        if name in ("print", "click.echo", "click.secho", "sys.stderr.write",
                    "sys.stdout.write", "warnings.warn", "pprint.pprint", "rich.print"):  # fmt: skip
            found.append((node.lineno, name))
        elif parts[-1] in ("add_task", "update") and (text := _bar_text(node)) is not None:
            # a progress bar's text is parsed as markup by its columns, not by the console
            if not _escaped(text):
                found.append((node.lineno, f"{name} (bar text not through markup/safe)"))
        elif len(parts) == 2 and parts[1] in LOG_METHODS and parts[0] in LOGGER_NAMES:
            # a logging call: a handler prints it; only a literal message with no argument
            # cannot carry outside text
            if not (len(node.args) == 1 and _is_literal(node.args[0]) and not node.keywords):
                found.append((node.lineno, name))
    return found


def test_every_terminal_write_goes_through_termsafe() -> None:
    offenders = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel == PRINTER:
            continue
        for line, name in printing_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, name) not in ALLOWED:
                offenders.append(f"{rel}:{line}: {name}")
    assert not offenders, (
        "write through cppo_bench.util.termsafe.echo / warn / console:\n" + "\n".join(offenders)
    )


def test_the_walk_sees_each_way_around() -> None:
    """The checker itself: each way around the printer is caught (so a pass above means
    something), and the printer's own calls are not."""
    bad = ast.parse(
        "print(x)\nclick.echo(x)\nclick.secho(x)\nsys.stderr.write(x)\nlog.warning('%s', x)\n"
        "logger.info(x)\nfrom rich.console import Console\nwarnings.warn(x)\n"
        "bar.add_task(label)\nbar.update(t, description=f'{x}')\n"
    )
    assert len(printing_calls(bad)) == 10
    good = ast.parse(
        "echo(x)\nwarn(log, x)\nlog.warning('constant')\nconsole().print(x)\n"
        "bar.add_task(markup(x))\nbar.update(t, advance=1)\n"
    )
    assert printing_calls(good) == []


def _unsafe_by_category(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


# every code point of the BMP and the tag block whose category makes it a control/format
# character, by the Unicode database (no hand list)
UNSAFE = [chr(c) for c in [*range(0x30000), *range(0xE0000, 0xE0080)]
          if _unsafe_by_category(chr(c))]  # fmt: skip


def test_safe_escapes_every_control_and_format_character_by_category() -> None:
    assert "\u061c" in UNSAFE and "\u2066" in UNSAFE and "\ufeff" in UNSAFE
    text = "".join(UNSAFE)
    out = safe(text)
    assert all(_unsafe_by_category(ch) is False for ch in out), "a raw one got through"
    assert out.isascii()
    # the escapes name each character: nothing is dropped
    assert out.count("\\") == len(UNSAFE)
    # printable text (letters, CJK, emoji, accents) is untouched
    plain = "résumé 中文 😀 ok"
    assert safe(plain) == plain


@pytest.mark.parametrize("ch", ["\u061c", "\u200f", "\u202e", "\u2066", "\u2069", "\u200b",
                                "\ufeff", "\x1b", "\x9b", "\u2028", "\u2029", "\x00", "\t",
                                "\U000e0001", "\u180e"])  # fmt: skip
def test_each_writer_escapes(ch: str, capsys: pytest.CaptureFixture[str]) -> None:
    evil = f"id{ch}x\nforged"
    echo(evil)
    echo(evil, err=True)
    c = console(force_terminal=False, width=200, file=sys.stdout)
    c.print(markup(evil))
    out = capsys.readouterr()
    for stream in (out.out, out.err):
        assert ch not in stream.replace("\n", "") or ch == "\n"
    assert out.err.count("\n") == 1  # echo wrote one line, the newline in data escaped
    import json

    assert json.loads(json_line({"a": evil}))["a"] == evil
    assert ch not in json_line({"a": evil})


def test_logging_helpers_escape(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from cppo_bench.util.termsafe import warn

    log = logging.getLogger("cppo_bench.test")
    with caplog.at_level(logging.WARNING):
        warn(log, "%s: not an audit", "a\u061c\x1b[2Jb\nc")
    (record,) = caplog.records
    assert record.getMessage() == "a\\u061c\\x1b[2Jb\\x0ac: not an audit"


def test_safe_never_raises_on_a_hostile_str() -> None:
    class Bad:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    assert "unprintable" in safe(Bad())
