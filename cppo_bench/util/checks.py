"""Value checkers: small functions that return None when a value is acceptable, else a short
phrase saying why not: the scalar type rules are the typed builder's
(`cppo_bench.util.builder.why_not`), so a stored document, a method option, a report spec and
the train config take the same values. The vocabulary of every schema and range check (the run store's
documents in cppo_bench.store.schema, the verifier's limits), kept at the bottom layer so
the verifier and the store share one meaning of "an integer" or "a finite number"."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from cppo_bench.util.builder import why_not

# a checker returns None when the value is acceptable, else why not (a short phrase)
Check = Callable[[Any], str | None]

MAX_NAME = 1024  # characters in a name (model ids and paths are well below this)
MAX_INT = (1 << 63) - 1  # an int64: pandas and numpy sum stored integers as int64
MAX_PROBLEMS = 10_000_000


def has_control(text: str) -> bool:
    """Control, format (bidi marks and isolates included), line- or paragraph-separator
    characters, judged by Unicode category (cppo_bench.util.termsafe): never part of a name."""
    if text.isprintable():  # fast path: isprintable() is False for every such character
        return False
    from cppo_bench.util.termsafe import unsafe_char

    return any(unsafe_char(ch) for ch in text)


# --- value checkers ----------------------------------------------------------------------------


def integer(lo: int = -MAX_INT, hi: int = MAX_INT) -> Check:
    def check(v: Any) -> str | None:
        # the builder's rule (cppo_bench.util.builder): bool is not a count, 3.0 is not an int
        return why_not(int, v) or (None if lo <= v <= hi else f"{v} is outside {lo}..{hi}")

    return check


def number(lo: float = 0.0, hi: float = float("inf")) -> Check:
    def check(v: Any) -> str | None:
        if type(v) not in (int, float):
            return why_not(float, v)
        if not math.isfinite(v):
            return f"{v} is not finite"
        return None if lo <= v <= hi else f"{v} is outside {lo}..{hi}"

    return check


def boolean(v: Any) -> str | None:
    return why_not(bool, v)


def text(v: Any) -> str | None:
    return why_not(str, v)


def name(v: Any) -> str | None:
    """A printable, non-empty, bounded string (it may reach a shell command or a terminal)."""
    if not isinstance(v, str):
        return f"expected a string, got {type(v).__name__}"
    if not v or len(v) > MAX_NAME:
        return f"expected 1..{MAX_NAME} characters, got {len(v)}"
    return "holds a control character" if has_control(v) else None


def optional(check: Check) -> Check:
    return lambda v: None if v is None else check(v)


def one_of(*values: str) -> Check:
    return lambda v: None if v in values else f"expected one of {', '.join(values)}"


def mapping(v: Any) -> str | None:
    return None if isinstance(v, dict) else f"expected an object, got {type(v).__name__}"


def list_of(check: Check, max_len: int = MAX_PROBLEMS) -> Check:
    def checked(v: Any) -> str | None:
        if not isinstance(v, list):
            return f"expected a list, got {type(v).__name__}"
        if len(v) > max_len:
            return f"more than {max_len} items"
        for i, item in enumerate(v):
            why = check(item)
            if why:
                return f"item {i}: {why}"
        return None

    return checked


def matches(pattern: re.Pattern[str], what: str) -> Check:
    return lambda v: None if isinstance(v, str) and pattern.match(v) else f"expected {what}"
