"""Escaping at the report's output boundaries: shell scripts, Markdown, CSV.

Cell labels, model names, option values and notes come from run manifests, which may come
from anyone. None of it may reach generated code or a viewer unescaped:

- shell (`fill_missing.sh`, the printed commands): every argument is one `shlex.quote`d
  word, and a name holding a control character is refused (a newline would end a comment
  and start a command); comments are single lines with control characters escaped.
- Markdown: HTML (`<script>`), table pipes, link brackets, backticks and backslashes are
  escaped, so data shows as text in every renderer.
- CSV: a text cell that a spreadsheet would read as a formula (starting with = + - @, tab
  or CR) gets a leading apostrophe (the OWASP advice); numbers are left as numbers.
"""

from __future__ import annotations

import re
import shlex

from cppo_bench.errors import UnsafeName
from cppo_bench.store.schema import has_control
from cppo_bench.util.termsafe import quote, safe

_MD_SPECIAL = re.compile(r"([\\`\[\]|<>])")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def shell_arg(value: object) -> str:
    """One shell word for `value`, or UnsafeName if it holds a control character."""
    text = str(value)
    if has_control(text):
        raise UnsafeName(
            f"refusing to write a shell command with {quote(safe(text))}: it holds a control character"
        )
    return shlex.quote(text)


COMMANDS = ("cppo-bench run",)  # all a fill-in script ever runs


def shell_command(line: str) -> str:
    """`line`, checked to be a `cppo-bench run` command made only of shlex-quoted words: it
    splits into words that quote back to exactly `line` (so no `;`, `|`, `$(...)`, backtick
    or redirection is live), begins with one of `COMMANDS`, and no word holds a control
    character. Whatever a stored name holds, the script runs nothing else (UnsafeName)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UnsafeName(f"refusing to write the command {quote(safe(line))}: {exc}") from None
    canonical = " ".join(shlex.quote(w) for w in words)
    if (
        canonical != line
        or " ".join(words[:2]) not in COMMANDS
        or any(has_control(w) for w in words)
    ):
        raise UnsafeName(
            f"refusing to write the command {quote(safe(line))}: not one cppo-bench command "
            "of quoted words"
        )
    return line


def shell_comment(text: str) -> str:
    """A one-line shell comment showing `text` (control characters escaped)."""
    return "# " + safe(text)


def md(text: object) -> str:
    """`text` for a Markdown table cell or paragraph: shown literally, never as HTML."""

    def one(match: re.Match[str]) -> str:
        ch = match.group(1)
        return _MD_ENTITIES.get(ch, "\\" + ch)

    return _MD_SPECIAL.sub(one, safe(text))


def md_fenced(text: str) -> str:
    """`text` as a Markdown code block (nothing in it renders as HTML): the fence is longer
    than any run of backticks inside, so data cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{safe(text, keep_newlines=True)}\n{fence}\n"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(text: str) -> str:
    """A CSV text cell a spreadsheet will not evaluate (numbers such as -0.5 unchanged)."""
    if text.startswith(FORMULA_START) and not _is_number(text.strip()):
        return "'" + text
    return text
