"""Streaming pieces of the stdin rules in compare.py.

A program's output is hostile and may be tens of MiB; the official checkers split it into
lists of lines and tokens (tens of bytes of Python object per byte of output: a 32 MB
output cost 3.9 GiB). Here the program's side is only ever walked lazily, one line or one
token at a time, against the expected side (trusted, materialised), stopping at the first
difference; memory stays a small constant times the output's size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

# What str.splitlines() splits on, "\r\n" first so that it counts as one break.
LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_AROUND_NEWLINE = re.compile(r"[^\S\n]*\n[^\S\n]*")
TOKEN = re.compile(r"\S+")  # str.split() with no argument


def iter_splitlines(text: str) -> Iterator[str]:
    """Lazily, exactly the items of text.splitlines()."""
    pos = 0
    for m in LINE_BREAK.finditer(text):
        yield text[pos : m.start()]
        pos = m.end()
    if pos < len(text):
        yield text[pos:]


def iter_split(text: str, sep: str) -> Iterator[str]:
    """Lazily, exactly the items of text.split(sep)."""
    pos = 0
    while True:
        end = text.find(sep, pos)
        if end < 0:
            yield text[pos:]
            return
        yield text[pos:end]
        pos = end + len(sep)


def iter_tokens(text: str) -> Iterator[str]:
    """Lazily, exactly the items of text.split()."""
    return (m.group() for m in TOKEN.finditer(text))


def joined_lines(text: str) -> str:
    """ "\\n".join(text.splitlines()) up to a trailing newline (callers strip the ends)."""
    return LINE_BREAK.sub("\n", text)


def joined_stripped_lines(text: str) -> str:
    """ "\\n".join(line.strip() for line in text.splitlines()), up to the ends' whitespace."""
    return _AROUND_NEWLINE.sub("\n", LINE_BREAK.sub("\n", text))


def equal_seq(got: Iterator, want: list, same: Callable[[object, object], bool] | None = None):
    """list(got) == want (or pairwise `same`), reading `got` no further than len(want) + 1."""
    n = 0
    for item in got:
        if n >= len(want):
            return False
        if not (item == want[n] if same is None else same(item, want[n])):
            return False
        n += 1
    return n == len(want)


def set_of_sets_equal(lines: Iterator[str], want: set[frozenset], key: Callable) -> bool:
    """{frozenset(map(key, line.split())) for non-blank line} == want, never holding more
    than one line's distinct tokens (at most the largest expected line's count)."""
    widest = max((len(s) for s in want), default=0)
    covered: set[frozenset] = set()
    for line in lines:
        tokens: set = set()
        for token in iter_tokens(line):
            tokens.add(key(token))
            if len(tokens) > widest:
                return False  # more distinct tokens than any expected line has
        if not tokens:
            continue
        fs = frozenset(tokens)
        if fs not in want:
            return False
        covered.add(fs)
    return len(covered) == len(want)
