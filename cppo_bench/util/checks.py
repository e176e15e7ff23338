"""Value checkers: small functions that return None when a value is acceptable, else a short
phrase saying why not: the scalar type rules are the typed builder's
(`cppo_bench.util.builder.why_not`), so a stored document, a method option, a report spec and
the train config take the same values. The vocabulary of every schema and range check (the run store's
documents in cppo_bench.store.schema, the verifier's limits), kept at the bottom layer so
the verifier and the store share one meaning of "an integer" or "a finite number". A
`Schema` (an object's fields) is a checker too, so documents nest."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cppo_bench.util.builder import why_not
from cppo_bench.util.termsafe import quote  # noqa: F401  (the one quoting, re-exported)

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
        return why_not(int, v) or (None if lo <= v <= hi else f"{quote(v)} is outside {lo}..{hi}")

    return check


def number(lo: float = 0.0, hi: float = float("inf")) -> Check:
    def check(v: Any) -> str | None:
        if type(v) not in (int, float):
            return why_not(float, v)
        if not math.isfinite(v):
            return f"{v} is not finite"
        return None if lo <= v <= hi else f"{quote(v)} is outside {lo}..{hi}"

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
    def check(v: Any) -> str | None:
        ok = isinstance(v, str) and v in values  # `[]` or `{}` is not a choice (nor hashable)
        return None if ok else f"expected one of {', '.join(values)}, got {quote(v, 60)}"

    return check


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
    def check(v: Any) -> str | None:
        ok = isinstance(v, str) and pattern.match(v)
        return None if ok else f"expected {what}, got {quote(v, 60)}"

    return check


def mapping_of(key: Check, value: Check, max_len: int = MAX_PROBLEMS) -> Check:
    """An object whose every key passes `key` and every value `value`."""

    def check(v: Any) -> str | None:
        why = mapping(v)
        if why:
            return why
        if len(v) > max_len:
            return f"more than {max_len} entries"
        for k, item in v.items():
            why = key(k) or value(item)
            if why:
                return f"entry {quote(k, 60)}: {why}"
        return None

    return check


def scalar(v: Any) -> str | None:
    """A JSON scalar a message or a hash may hold: null, a bool, a finite number or a
    printable bounded text (identity values, method options of a method not installed)."""
    if v is None or type(v) in (bool, int):
        return None if type(v) is not int or abs(v) <= MAX_INT else f"{quote(v)} is too large"
    if type(v) is float:
        return None if math.isfinite(v) else f"{v} is not finite"
    if isinstance(v, str):
        return "holds a control character" if has_control(v) else None
    return f"expected a scalar, got {type(v).__name__}"


# --- documents: a schema is a checker of an object, nested as deep as its readers read ------

_FIELD = "field '"  # how a problem names its field: nested ones join as 'extra.tests.problems'


@dataclass(frozen=True)
class Schema:
    """Fields (name -> checker), which of them may be absent, and checks across fields."""

    name: str
    fields: Mapping[str, Check]
    optional: frozenset[str] = frozenset()
    relations: tuple[Callable[[dict[str, Any]], str | None], ...] = ()
    open_ended: bool = False  # fields beyond `fields` are recorded context, not an error
    all_optional: bool = False  # every field may be absent (an `extra` object)

    def __call__(self, doc: Any) -> str | None:
        """A schema is a checker too: a field's value may be a document of its own."""
        return self.check(doc)

    def check(self, doc: Any) -> str | None:
        """None when `doc` conforms, else the first problem found ("field 'extra.tests':
        ..."): a nested schema's field is named by its dotted path."""
        if not isinstance(doc, dict):
            return f"expected a JSON object, got {type(doc).__name__}"
        unknown = sorted(set(doc) - set(self.fields), key=str)
        if unknown and not self.open_ended:
            return f"unknown field(s) {', '.join(quote(u, 60) for u in unknown[:5])}"
        for key, check in self.fields.items():
            if key not in doc:
                if key in self.optional or self.all_optional:
                    continue
                return f"missing field {quote(key)}"
            why = check(doc[key])
            if why:
                if isinstance(check, Schema) and why.startswith(_FIELD):
                    return f"{_FIELD}{key}.{why[len(_FIELD) :]}"
                return f"field {quote(key)}: {why}"
        for relation in self.relations:
            why = relation(doc)
            if why:
                return why
        return None


def context(name: str, fields: Mapping[str, Check], **kw: Any) -> Schema:
    """An open `extra` object: every field any reader reads is declared here with its type
    and range (all optional: older runs lack them); other keys are recorded context that
    no reader may read (tests/store/test_schema_fields.py walks the readers for that)."""
    return Schema(name, fields, open_ended=True, all_optional=True, **kw)
