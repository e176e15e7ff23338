"""Printing text that came from data or programs, safely.

Problem ids, model names, record fields, verifier details and error messages quoting them
come from files and programs the user did not write. Printed raw, an ESC sequence in one
can rewrite the screen or the window title, a CR or a bidi override can hide what precedes
it, a newline can forge a line of output, and rich markup in it (`[/]`) raises MarkupError
or restyles the output. Everything printed that holds such text goes through here:

- `safe(text)`: control characters (C0 but tab, DEL, C1), line/paragraph separators and
  bidi controls become visible escapes (`\\x1b`, `\\u202e`); newlines too unless kept.
- `markup(text)`: the same, then rich markup escaped, for text placed in rich output.
- `console(...)`: a rich Console that applies `safe` (keeping newlines) to every string
  it renders, and renders a string whose markup is broken as plain text, never raising.
- `echo(...)`: click.echo of `safe` text.
"""

from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_UNSAFE_KEEP_NL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: Any, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (never interpreted)."""
    pattern = _UNSAFE_KEEP_NL if keep_newlines else _UNSAFE
    return pattern.sub(_escape, str(text))


def markup(text: Any) -> str:
    """`safe(text)` with rich markup escaped: shown literally inside rich output."""
    from rich.markup import escape

    return escape(safe(text))


def json_line(value: Any) -> str:
    """JSON of `value` on one line, non-ASCII text kept readable but every character a
    terminal could act on (C1, DEL, separators, bidi) written as a \\u escape (valid JSON:
    such characters only occur inside strings, where the escape means the same)."""
    import json

    text = json.dumps(value, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(message: Any = "", err: bool = False, nl: bool = True) -> None:
    """click.echo of text that may hold data (newlines of the message itself are kept:
    escape the data pieces with `safe` where a newline in them must not start a line)."""
    import click

    click.echo(safe(message, keep_newlines=True), err=err, nl=nl)


def console(**kwargs: Any) -> Any:
    """A rich Console (see `_safe_console_class`) with the given Console arguments."""
    return _safe_console_class()(**kwargs)


_CLASS: type | None = None


def _safe_console_class() -> type:
    """Built on first use: rich is imported only by commands that print with it."""
    global _CLASS
    if _CLASS is None:
        from rich.console import Console
        from rich.errors import MarkupError

        class SafeConsole(Console):
            def render_str(self, text: str, **kwargs: Any) -> Any:
                text = safe(text, keep_newlines=True)
                try:
                    return super().render_str(text, **kwargs)
                except MarkupError:  # markup from data: shown as it is, not interpreted
                    return super().render_str(text, **{**kwargs, "markup": False})

        _CLASS = SafeConsole
    return _CLASS
