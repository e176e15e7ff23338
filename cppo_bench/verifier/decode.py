"""Host side of the status channel: bytes from a test child -> a status dict and a call value.

Everything here reads bytes a hostile program controls, so every step is bounded:
- the raw status is at most `MAX_STATUS_BYTES`, and its JSON may hold at most `MAX_NODES`
  values (counted on the raw bytes before parsing, so a 64 MiB `[[],[],...]` never becomes
  20 million Python lists);
- decoding does not recurse past `MAX_DEPTH` (deeper becomes `Unrepresentable`);
- returned sets and dicts never become hashed containers of attacker-chosen values: hashing
  is deterministic for ints, floats and tuples, so a few thousand colliding keys would make
  building a dict quadratic. They become `DecodedSet` / `DecodedDict`, which compare with a
  trusted (expected) set/dict in linear time by looking the program's items up in it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cppo_bench.verifier.wire import Unrepresentable

MAX_STATUS_BYTES = 64 << 20
MAX_NODES = 1 << 20  # JSON values in one status (lists, dicts, scalars)
MAX_DEPTH = 100  # wire.encode_value never nests deeper
SMALL_FROZEN = 256  # a frozenset this small may be hashed (it can be a dict key)
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
CORRUPT = {"exc": "CorruptStatus"}


def parse_status(raw: bytes) -> dict:
    """The child's JSON status report, or CORRUPT when it is not a bounded JSON object."""
    if not raw:
        return {}
    if len(raw) > MAX_STATUS_BYTES:
        return dict(CORRUPT)
    skeleton = _STRINGS.sub(b'""', raw)  # strings count as one value whatever they hold
    nodes = sum(skeleton.count(c) for c in (b"[", b"{", b",", b":"))
    if nodes > MAX_NODES:
        return dict(CORRUPT)
    try:
        status = json.loads(raw)
    except (ValueError, RecursionError, MemoryError):
        return dict(CORRUPT)
    return status if isinstance(status, dict) else dict(CORRUPT)


class DecodedSet:
    """A set (or frozenset) the program returned: compared, never hashed element-wise."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: list, frozen: bool) -> None:
        self.items, self.frozen = items, frozen

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (set, frozenset)):
            return NotImplemented if isinstance(other, DecodedSet) else False
        if len(self.items) < len(other):
            return False
        # Every item must be one of the trusted set's; those found are counted by the trusted
        # set's own hashes, so at most len(other) distinct keys are ever hashed here.
        seen: set = set()
        for item in self.items:
            try:
                if item not in other:
                    return False
            except TypeError:
                return False
            seen.add(item)
        return len(seen) == len(other) == len(self.items)

    def __repr__(self) -> str:
        return ("frozenset" if self.frozen else "set") + f"({_short_repr(self.items)})"


class DecodedDict:
    """A dict the program returned, as its (key, value) pairs; equal to a trusted dict with
    the same keys mapping to equal values."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, dict):
            return NotImplemented if isinstance(other, DecodedDict) else False
        if len(self.pairs) != len(other):
            return False
        seen: set = set()
        for key, value in self.pairs:
            try:
                if key not in other or not other[key] == value:
                    return False
            except TypeError:
                return False
            seen.add(key)
        return len(seen) == len(other)

    def get(self, key: Any) -> Any:
        """The value of the first pair whose key equals `key` (a trusted key)."""
        for k, v in self.pairs:
            if type(k) is type(key) and k == key:
                return v
        raise KeyError(key)

    def __repr__(self) -> str:
        return "{" + _short_repr(self.pairs)[1:-1] + "}"


def decode_value(v: Any, depth: int = 0) -> Any:
    """Tagged JSON (wire.encode_value) -> a value to compare; bounded depth, no hashing of
    the program's data (see the module doc)."""
    if depth > MAX_DEPTH:
        return Unrepresentable("nested too deep")
    if isinstance(v, list):
        return [decode_value(x, depth + 1) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) != 1:
        return Unrepresentable("malformed")
    ((tag, body),) = v.items()
    if tag == "b" and isinstance(body, str):
        try:
            return body.encode("latin-1")
        except UnicodeEncodeError:
            return Unrepresentable("malformed")
    if tag == "u":
        return Unrepresentable(str(body)[:100])
    if not isinstance(body, list):
        return Unrepresentable("malformed")
    if tag == "t":
        return tuple(decode_value(x, depth + 1) for x in body)
    if tag in ("s", "f"):
        items = [decode_value(x, depth + 1) for x in body]
        if tag == "f" and len(items) <= SMALL_FROZEN:
            try:  # small enough to hash whatever collides; may then serve as a dict key
                frozen = frozenset(items)
            except TypeError:
                return Unrepresentable("malformed")
            return frozen if len(frozen) == len(items) else Unrepresentable("malformed")
        return DecodedSet(items, frozen=tag == "f")
    if tag == "d":
        pairs = []
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                return Unrepresentable("malformed")
            pairs.append((decode_value(pair[0], depth + 1), decode_value(pair[1], depth + 1)))
        return DecodedDict(pairs)
    return Unrepresentable("malformed")


def _short_repr(value: Any, width: int = 200) -> str:
    """repr of at most `width` characters, without building the whole repr of a huge value."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxstring, r.maxother = 4, 12, 12, width, width
    r.maxdict = r.maxset = r.maxfrozenset = 12
    return r.repr(value)[:width]


def short_repr(value: Any) -> str:
    """A bounded repr for verdict details."""
    return _short_repr(value)
