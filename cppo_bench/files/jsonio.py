"""Reading JSON and JSONL that came from elsewhere, within bounds.

- Lines are split on `\\n` only: U+2028 / U+2029 / U+0085 / a lone CR are characters inside a
  JSON string, not line ends (`str.splitlines` splits on all of them, so a record holding
  one would be cut in two and the tool could not re-read its own output).
- Each line is decoded on its own: one line of invalid UTF-8 is that line's error, with its
  number, not the whole file's.
- A line longer than `max_line` bytes is skipped without being held in memory.
- JSON nested deeper than `MAX_DEPTH` is refused (the C parser's RecursionError, and the
  recursion of everything that later walks the value, never reach the user).
- An object that names a key twice is refused: parsers disagree on which value wins
  (Python's keeps the last, others the first), so `{"passed": false, "passed": true}` would
  mean one thing to this reader and another to the next tool that reads the same file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from cppo_bench.util.termsafe import quote

MAX_DEPTH = 100  # benchmark records nest 3 or 4 levels; run records 4
MAX_LINE = 256 << 20  # default cap on one line's bytes (LiveCodeBench lines reach ~100 MB)
_SKIP_CHUNK = 1 << 20


@dataclass(frozen=True)
class Line:
    lineno: int  # 1-based
    text: str | None  # None when unreadable (see error)
    error: str | None = None
    torn: bool = False  # the file's last line, without its newline (a killed writer's)


def split_lines(fh: IO[bytes], max_line: int = MAX_LINE) -> Iterator[Line]:
    """The lines of a binary stream, split on b"\\n" only, each decoded as UTF-8. A line is
    read a chunk at a time, so one longer than `max_line` is dropped once the cap is passed
    (never held whole: `readline(max_line)` would buffer all of it first)."""
    lineno = 0
    while True:
        pieces: list[bytes] = []
        size, over = 0, False
        while True:
            piece = fh.readline(_SKIP_CHUNK)
            if not piece:
                break
            size += len(piece)
            if size > max_line:
                over, pieces = True, []
            elif not over:
                pieces.append(piece)
            if piece.endswith(b"\n"):
                break
        if size == 0:
            return
        lineno += 1
        if over:
            yield Line(lineno, None, f"longer than {max_line} bytes")
            continue
        raw = b"".join(pieces)
        torn = not raw.endswith(b"\n")
        try:
            yield Line(lineno, raw.decode("utf-8"), torn=torn)
        except UnicodeDecodeError as exc:
            yield Line(lineno, None, f"not UTF-8 ({exc.reason} at byte {exc.start})", torn)


def read_capped(fh: IO[bytes], cap: int) -> bytes | None:
    """The whole stream, or None if it holds more than `cap` bytes. Read a chunk at a time:
    `read(cap + 1)` would allocate cap + 1 bytes up front, whatever the file's size."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = fh.read(min(_SKIP_CHUNK * 16, cap + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > cap:
            return None


def depth_error(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why `value` nests too deeply, or None (an iterative walk: no recursion of its own)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > max_depth:
                return f"nested more than {max_depth} levels deep"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children if isinstance(c, (list, dict)))
    return None


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, constants: bool = True) -> Any:
    """`json.loads` that raises only ValueError (json.JSONDecodeError for syntax; bytes that
    are not UTF-8 too), refuses values nested deeper than `max_depth` and an object naming a
    key twice. `constants=False` refuses NaN / Infinity too (not JSON, RFC 8259; Python's
    writer emits them, so files this tool wrote keep them)."""
    if constants:
        return _decoded(text, max_depth)
    return _decoded(text, max_depth, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON ({name} is not JSON)")


class DuplicateKey(ValueError):
    """A JSON object that names the same key twice."""


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of `pairs`, or DuplicateKey naming the first key given twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(
                    f"invalid JSON (the key {quote(key, 60)} appears twice in one object)"
                )
            seen.add(key)
    return obj


def _decoded(text: str | bytes, max_depth: int, **hooks: Any) -> Any:
    """json.loads with `hooks`, every object through `unique_object` (after `object_hook`
    when one is given), a RecursionError and a nesting past `max_depth` as ValueError."""
    after = hooks.pop("object_hook", None)
    hooks["object_pairs_hook"] = (
        unique_object if after is None else (lambda pairs: after(unique_object(pairs)))
    )
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        raise ValueError(f"invalid JSON (nested more than {max_depth} levels deep)") from None
    why = depth_error(value, max_depth)
    if why:
        raise ValueError(f"invalid JSON ({why})")
    return value


class TooMany(ValueError):
    """A JSON document with more objects or numbers than its reader allows."""


def loads_counted(text: str | bytes, max_values: int, max_depth: int = MAX_DEPTH) -> Any:
    """`loads` that counts objects and numbers *while* decoding and stops past `max_values`:
    a few KB of zlib can inflate to millions of tiny records, and a count checked after
    decoding has already paid for building them all."""
    count = [0]

    def tick(value: Any) -> Any:
        count[0] += 1
        if count[0] > max_values:
            raise TooMany(f"more than {max_values} JSON values")
        return value

    return _decoded(text, max_depth, object_hook=tick, parse_int=lambda s: tick(int(s)),
                    parse_float=lambda s: tick(float(s)))  # fmt: skip
