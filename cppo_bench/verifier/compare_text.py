"""Streaming pieces of the stdin rules in compare.py.

A program's output is hostile and may be tens of MiB; the official checkers split it into
lists of lines and tokens (tens of bytes of Python object per byte of output: a 32 MB
output cost 3.9 GiB). Here the program's side is only ever walked lazily, one line or one
token at a time, against the expected side (trusted, materialised), stopping at the first
difference; memory stays a small constant times the output's size.
"""

from __future__ import annotations

import hashlib
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

# What str.splitlines() splits on, "\r\n" first so that it counts as one break.
LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
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


def concat_equals(pieces: Iterable[str], want: str) -> bool:
    """ "".join(pieces) == want, one piece at a time (no copy of the whole)."""
    pos = 0
    for piece in pieces:
        if not want.startswith(piece, pos):
            return False
        pos += len(piece)
    return pos == len(want)


def joined_lines(text: str) -> Iterator[str]:
    """The pieces of "\\n".join(text.splitlines()).strip(): every line break one "\\n"
    (stripping first is the same: every break character is whitespace)."""
    text = text.strip()
    pos = 0
    for m in LINE_BREAK.finditer(text):
        yield text[pos : m.start()]
        yield "\n"
        pos = m.end()
    yield text[pos:]


def joined_stripped_lines(text: str) -> Iterator[str]:
    """The pieces of "\\n".join(line.strip() for line in text.splitlines()).strip(): blank
    lines at either end dropped (the strip), the others kept."""
    started, pending = False, 0
    for line in iter_splitlines(text):
        line = line.strip()
        if not line:
            pending += started
            continue
        if started:
            yield "\n" * (pending + 1)
        started, pending = True, 0
        yield line


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
    than one line's distinct tokens (at most the largest expected line's count). `key` must
    give strings: a set of the program's values is only ever one of strings, whose hashes
    are keyed per process, so no output can make the sets collide (linear time)."""
    widest = max((len(s) for s in want), default=0)
    covered: set[frozenset] = set()
    for line in lines:
        tokens: set = set()
        for token in iter_tokens(line):
            text = key(token)
            if type(text) is not str:
                raise TypeError("set_of_sets_equal: keys must be str (see the doc)")
            tokens.add(text)
            if len(tokens) > widest:
                return False  # more distinct tokens than any expected line has
        if not tokens:
            continue
        fs = frozenset(tokens)
        if fs not in want:
            return False
        covered.add(fs)
    return len(covered) == len(want)


T = TypeVar("T")
_END = object()


def equal_iter(got: Iterable[T], want: Iterable[T], same: Callable[[T, T], bool]) -> bool:
    """list(got) == list(want) pairwise under `same`, both sides streamed, stopping at the
    first difference (neither side is ever materialised)."""
    want_it = iter(want)
    for a in got:
        for b in want_it:  # (at most one item: the break below)
            if not same(a, b):
                return False
            break
        else:
            return False  # `want` ended first
    return next(want_it, _END) is _END  # (False: `got` ended first)


# Past this many bytes of expected output, the set-of-sets stages compare 8-byte keyed
# digests of each line's token set instead of Python sets (~80 bytes per distinct line and
# more per token: GBs for a 64 MiB expected output). The key is secret to this process, so
# a program cannot aim for a collision; an accidental one has odds of ~lines**2 / 2**64.
DIGEST_ABOVE = 4 << 20
_KEY = os.urandom(16)


def line_digests(lines: Iterable[str], key: Callable, expected: bool):
    """The sorted distinct digests of {frozenset(map(key, line.split())) for each line}
    (8 bytes a line and, while a line is read, 8 bytes a token; the program's lines without
    tokens are dropped, as upstream). None when the set can equal no other: a line holds a
    NaN, or an expected line no token (the program's side never holds an empty set)."""
    import numpy  # (a dependency; only for outputs this large)

    out = array("Q")
    for line in lines:
        # each token as the keyed 64-bit hash of its canonical text (str hashing is keyed
        # per process); a line's set becomes its sorted distinct token hashes
        hashes = array("q", (hash(_canonical(key(t))) for t in iter_tokens(line)))
        if not hashes:
            if expected:
                return None
            continue
        if (
            key is not str
            and "n" in line.lower()
            and any(t != t for t in map(key, iter_tokens(line)))
        ):
            return None  # NaN (float() reads one only from a token spelling "nan")
        if len(hashes) < 64:  # (numpy's per-call cost dominates on short lines)
            distinct = array("q", sorted(set(hashes))).tobytes()
        else:
            distinct = numpy.unique(numpy.frombuffer(hashes, dtype=numpy.int64)).tobytes()
        digest = hashlib.blake2b(distinct, digest_size=8, key=_KEY).digest()
        out.append(int.from_bytes(digest, "little"))
    return numpy.unique(numpy.frombuffer(out, dtype=numpy.uint64))


def _canonical(token: str | float) -> str:
    """A set element as text: 0.0 and -0.0 are one element, as in a Python set."""
    return token if isinstance(token, str) else repr(token + 0.0)


def digests_equal(got: Iterable[str], want: Iterable[str], key: Callable) -> bool:
    import numpy

    a = line_digests(got, key, expected=False)
    b = line_digests(want, key, expected=True) if a is not None else None
    return b is not None and numpy.array_equal(a, b)
