"""Printing text that came from data or programs, safely.

Problem ids, model names, record fields, verifier details and error messages quoting them
come from files and programs the user did not write. Printed raw, an ESC sequence in one
can rewrite the screen or the window title, a CR or a bidi override can hide what precedes
it, a newline can forge a line of output, and rich markup in it (`[/]`) raises MarkupError
or restyles the output. Everything printed that holds such text goes through here:

- `safe(text)`: every character of Unicode category Cc, Cf, Zl, Zp (and Cs, Cn), and every
  bidi control, becomes a visible escape (`\\x1b`, `\\u061c`, `\\u202e`); judged by
  category, not a hand list, so a format character nobody listed is escaped too.
- `markup(text)`: the same, then rich markup escaped, for text placed in rich output.
- `console(...)`: a rich Console that applies `safe` (keeping newlines) to every string
  it renders, and renders a string whose markup is broken as plain text, never raising.
- `echo(...)`: THE writer of a line to the terminal: click.echo of `safe` text. `warn` /
  `info` do the same for logging. `tests/util/test_untrusted_printer.py` walks the code and fails
  on any other print / click.echo / sys.stderr.write / logging call (exceptions listed there).
"""

from __future__ import annotations

import re
from typing import Any

# Candidates only (everything but printable ASCII); each is then judged by its Unicode
# category, so a new format character (U+061C, U+2066..., U+FEFF) is escaped without a list.
_NON_ASCII = re.compile(r"[^\x20-\x7e]")
# Cc control, Cf format (bidi marks and isolates, zero-width, BOM), Zl / Zp separators, Cs
# lone surrogates, Cn unassigned (a newer terminal may give it a meaning this Python lacks)
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
# bidi classes of the embedding / override / isolate controls (all Cf today; checked too so
# a future reclassification cannot let one through)
_BIDI_CONTROLS = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def unsafe_char(ch: str) -> bool:
    """`ch` is a control, format, separator or bidi character a terminal could act on."""
    import unicodedata

    return (
        unicodedata.category(ch) in UNSAFE_CATEGORIES
        or unicodedata.bidirectional(ch) in _BIDI_CONTROLS
    )


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _substitute(text: str, keep: str) -> str:
    def one(match: re.Match[str]) -> str:
        ch = match.group()
        return ch if ch in keep or not unsafe_char(ch) else _escape_char(ch)

    return _NON_ASCII.sub(one, text)


def safe(text: Any, keep_newlines: bool = False) -> str:
    """`text` with every control / format / separator character (by Unicode category, see
    `UNSAFE_CATEGORIES`) shown as an escape, never interpreted; with `keep_newlines` (a
    message's own layout) newline and tab are kept. Never raises."""
    try:
        text = str(text)
    except Exception as exc:  # a hostile __str__: say so instead of raising
        text = f"<unprintable {type(text).__name__}: {type(exc).__name__}>"
    return _substitute(text, "\t\n" if keep_newlines else "")


QUOTE_CHARS = 200  # of a bad value quoted in a skip or error line (a 2 MB field: its head)


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """The one quoting of a bad value in a message: its repr, of at most about `limit`
    characters, built without ever writing out the whole of a huge or deep value (a string
    or bytes is cut BEFORE repr, so a 2 MB field costs nothing; a list shows its first
    items; an int of thousands of digits, whose str() Python refuses, is named by its size),
    with how much was left out. Escaped by the printer like any message. Never raises."""
    import reprlib

    try:
        if isinstance(value, str | bytes) and len(value) > limit:
            return f"{value[:limit]!r}... ({len(value) - limit} more)"
        if isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > 3 * limit:  # > ~limit digits: never turned into text
                return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
        shorten = reprlib.Repr()
        shorten.maxstring = shorten.maxother = shorten.maxlong = limit
        shorten.maxlist = shorten.maxdict = shorten.maxtuple = shorten.maxset = 6
        shorten.maxlevel = 3
        text = shorten.repr(value)
        if isinstance(value, list | tuple | set | frozenset | dict) and len(value) > 6:
            text += f" ({len(value)} items, {len(value) - 6} more)"
    except Exception as exc:  # a hostile __repr__, a recursion
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more)"


def type_name(value: Any) -> str:
    """What a parsed value is, without any of its text: for a message about a whole file or
    document, where quoting it would print the file (a spec linked to /etc/passwd)."""
    if value is None:
        return "nothing (an empty document or null)"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str | bytes):
        return f"a string of {len(value):,} characters"
    if isinstance(value, list | tuple):
        return f"a list of {len(value):,} items"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def markup(text: Any) -> str:
    """`safe(text)` with rich markup escaped: shown literally inside rich output."""
    from rich.markup import escape

    return escape(safe(text))


def json_line(value: Any) -> str:
    """JSON of `value` on one line, non-ASCII text kept readable but every character a
    terminal could act on (see `unsafe_char`) written as a \\u escape (valid JSON: such
    characters only occur inside strings, where the escape means the same)."""
    import json

    text = json.dumps(value, ensure_ascii=False)

    def one(match: re.Match[str]) -> str:
        ch = match.group()
        if not unsafe_char(ch):
            return ch
        return "".join(f"\\u{u:04x}" for u in _utf16(ch))

    return _NON_ASCII.sub(one, text)


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


LINE_CHARS = 2000  # of one line in a human view (a one-line 3 MB program: its head)


def clip_lines(text: str, limit: int = LINE_CHARS) -> str:
    """Each line of `text` cut to `limit` characters, saying how many more it held: a
    terminal, rich's layout and the reader all stop at a screenful, never at 3,000,000
    characters of one line (two 5M-character programs ran past 120 s in `samples`)."""
    if len(text) <= limit:
        return text  # (the common case: nothing to split)
    out = []
    for line in text.split("\n"):
        if len(line) > limit:
            line = f"{line[:limit]}... ({len(line) - limit} more characters)"
        out.append(line)
    return "\n".join(out)


def echo(
    message: Any = "", err: bool = False, nl: bool = True, lines: bool = False,
    whole: bool = False,
) -> None:  # fmt: skip
    """THE way a line reaches the terminal (stdout, or stderr with `err`): `message` passed
    through `safe`, so one call writes one line; `lines=True` keeps the message's own
    newlines (help, JSON with indent, a multi-line check list built from escaped pieces).
    Every line is clipped (`clip_lines`) unless `whole`: machine output (`--json` lines)
    that a program reads back whole."""
    import click

    text = safe(message, keep_newlines=lines)
    click.echo(text if whole else clip_lines(text), err=err, nl=nl)


def warn(logger: Any, message: Any, *args: Any) -> None:
    """`logger.warning` of outside text (a logger's handler writes it to the terminal): the
    message and each %-argument escaped, one line. `logger` is a logging.Logger."""
    logger.warning(
        clip_lines(safe(message)), *(clip_lines(safe(a)) if isinstance(a, str) else a for a in args)
    )


def info(logger: Any, message: Any, *args: Any) -> None:
    """`logger.info` of outside text, escaped as in `warn`."""
    logger.info(
        clip_lines(safe(message)), *(clip_lines(safe(a)) if isinstance(a, str) else a for a in args)
    )


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
                # every str rich prints (table cells, panels, print) comes here: escaped,
                # and each line clipped before rich lays it out
                text = clip_lines(safe(text, keep_newlines=True))
                try:
                    return super().render_str(text, **kwargs)
                except MarkupError:  # markup from data: shown as it is, not interpreted
                    return super().render_str(text, **{**kwargs, "markup": False})

        _CLASS = SafeConsole
    return _CLASS
