"""Host side of the status channel: bytes from a test child -> a status dict and a call value.

Everything here reads bytes a hostile program controls, so every step is bounded:
- the raw status is at most `MAX_STATUS_BYTES`, and its JSON may hold at most `MAX_NODES`
  values, or about as many as the expected value where that is larger (`node_cap`) (counted on the raw bytes before parsing, so a 64 MiB `[[],[],...]` never becomes
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
import reprlib
from typing import Any

from cppo_bench.verifier.inside.wire import MAX_DECIMAL_DIGITS, MAX_INT_BITS, Unrepresentable

MAX_STATUS_BYTES = 64 << 20
MAX_NODES = 1 << 20  # JSON values in one status (lists, dicts, scalars)
MAX_DEPTH = 100  # wire.encode_value never nests deeper
SMALL_FROZEN = 256  # a frozenset this small may be hashed (it can be a dict key)
# a string, or an unterminated one to the end (a lone backslash last too): the match never
# fails after its loop, so each byte is scanned once ('"(...)*"' alone rescans the rest of
# an unterminated string from every quote inside it: minutes for a forged status)
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.S)
CORRUPT = {"exc": "CorruptStatus"}


def node_count(raw: bytes) -> int:
    """How many JSON values `raw` holds (lists, dicts, scalars), counted on the bytes."""
    skeleton = _STRINGS.sub(b'""', raw)  # strings count as one value whatever they hold
    return sum(skeleton.count(c) for c in (b"[", b"{", b",", b":"))


# The most nodes (node_count) one value's tagged encoding costs, per node of a JSON value it
# is `==` to: a value equal to the expected one has the same shape (each list or dict one of
# the program's, each scalar one), and each piece costs at most its separator plus 6 nodes:
# a Fraction with a big numerator, {"q": [{"i": "..."}, 1]}; a complex {"c": [re, im]} or a
# Fraction of a float 4; a tuple, numpy scalar, Decimal or dict header 2-3. 8 leaves room.
NODES_PER_VALUE = 8


def node_cap(expected: str) -> int:
    """The most values a status may hold when the expected output is `expected` (trusted):
    MAX_NODES, or NODES_PER_VALUE per node of the expected value (+64 for a scalar), so that
    every value the official checkers find `==` to it (complex, Fraction, Decimal, numpy
    scalars, a tuple for a list) is parsed (issue 42: 250,000 complex numbers equal to the
    expected floats were refused under 4x), and nothing much larger."""
    nodes = node_count(expected.encode("utf-8", "surrogatepass"))
    return max(MAX_NODES, NODES_PER_VALUE * nodes + 64)


TOO_LARGE = {"value": {"u": "value larger than the expected output"}}


def parse_status(raw: bytes, max_nodes: int = MAX_NODES) -> dict:
    """The child's JSON status report, or CORRUPT when it is not a bounded JSON object. A
    returned value past `max_nodes` (node_cap) is one that equals nothing: TOO_LARGE."""
    if not raw:
        return {}
    if len(raw) > MAX_STATUS_BYTES:
        return dict(CORRUPT)
    if node_count(raw) > max_nodes:
        return dict(TOO_LARGE) if raw.startswith(b'{"value": ') else dict(CORRUPT)
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
    if tag in ("i", "q", "D", "c"):
        return _number(tag, body)
    if tag == "n":
        return _numpy_scalar(body)
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


# what wire._numpy_scalar writes: a byte order, a numpy kind (wire.NUMPY_KINDS) and size,
# datetime units, then the scalar's bytes
_NUMPY = re.compile(r"([<>|=])(b1|[iu][1248]|f(?:2|4|8|10|12|16)|c(?:8|16|20|24|32)"
                    r"|[mM]8(?:\[[0-9]{0,9}[a-zA-Z]{1,2}\])?):((?:[0-9a-f]{2}){1,32})")  # fmt: skip


def _numpy_scalar(body: Any) -> Any:
    """The very numpy scalar the program returned (same dtype, same bytes): compared with
    numpy's own `==`, as the official checkers compare it. Bounded: at most 32 bytes."""
    match = _NUMPY.fullmatch(body) if isinstance(body, str) else None
    if match is None:
        return Unrepresentable("malformed")
    import numpy  # (a dependency of the verifier; only for programs that return its scalars)

    try:
        dtype = numpy.dtype(match[1] + match[2])
        raw = bytes.fromhex(match[3])
        if dtype.itemsize != len(raw) or dtype.kind not in "biufcmM":
            return Unrepresentable("malformed")
        return numpy.frombuffer(raw, dtype)[0]
    except (TypeError, ValueError):
        return Unrepresentable("malformed")


_HEX = re.compile(rf"\A-?[0-9a-f]{{1,{MAX_INT_BITS // 4 + 1}}}")
_DECIMAL = re.compile(
    rf"\A-?(?:[0-9]{{1,{MAX_DECIMAL_DIGITS}}}E-?[0-9]{{1,20}}|s?NaN[0-9]{{0,40}}|Infinity)"
)


class DecodedFraction:
    """A fractions.Fraction the program returned, as (numerator, denominator). Equal to what
    the Fraction would be `==` to: Fraction.__eq__ compares an int or a float (the only
    numbers JSON has) by its exact ratio against the stored pair, so the pair is turned,
    once, into the int or float with that exact ratio, or into nothing (it equals no JSON
    value). No gcd, no product: linear in the pair's size."""

    def __init__(self, num: int, den: int) -> None:
        self.num, self.den = num, den
        self.equiv: Any = None
        if den == 1:
            self.equiv = num
        elif den > 1 and den & (den - 1) == 0:  # only a power of two can give a float
            try:
                f = num / den
                if f.as_integer_ratio() == (num, den):
                    self.equiv = f
            except OverflowError:
                pass

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DecodedFraction):
            return (self.num, self.den) == (other.num, other.den)
        return self.equiv is not None and self.equiv == other

    def __hash__(self) -> int:  # as Fraction's: equal numbers hash alike
        return hash(self.equiv) if self.equiv is not None else hash((self.num, self.den))

    def __repr__(self) -> str:
        return f"Fraction({_short_repr(self.num, 40)}, {_short_repr(self.den, 40)})"


def _int(body: Any) -> Any:
    if type(body) is int:
        return body
    if isinstance(body, dict) and len(body) == 1 and type(body.get("i")) is str:
        if _HEX.fullmatch(body["i"]):
            return int(body["i"], 16)  # a power-of-two base: linear, no digit limit
    return None


def _number(tag: str, body: Any) -> Any:
    """The bounded number tags of wire.encode_value: "i" big int (hex), "q" Fraction, "D"
    Decimal, "c" complex; anything malformed is Unrepresentable."""
    if tag == "i":
        value = _int({"i": body})
        return value if value is not None else Unrepresentable("malformed")
    if tag == "q" and isinstance(body, list) and len(body) == 2:
        num, den = _int(body[0]), _int(body[1])
        if num is not None and den is not None:
            return DecodedFraction(num, den)
    if tag == "D" and isinstance(body, str) and _DECIMAL.fullmatch(body):
        from decimal import Decimal

        return Decimal(body)  # compares exactly with ints and floats, as in the original
    if tag == "c" and isinstance(body, list) and len(body) == 2:
        if all(type(x) is float for x in body):
            return complex(body[0], body[1])
    return Unrepresentable("malformed")


class _ClippedRepr(reprlib.Repr):
    """reprlib's clipped repr, never building the whole text of a huge number or bytes: an
    int's repr raises past Python's 4300-digit limit (and is quadratic below it)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxstring = 4, 12, 12, width
        self.maxdict = self.maxset = self.maxfrozenset = 12
        self.maxlong = self.maxother = width

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 4 * self.maxlong:  # (over ~1.2 digits a bit past 4300 digits)
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)

    def repr_bytes(self, x: bytes, level: int) -> str:
        cut = x[: self.maxstring]
        return repr(cut) + ("..." if len(x) > len(cut) else "")

    repr_bytearray = repr_bytes


def _short_repr(value: Any, width: int = 200) -> str:
    """repr of at most `width` characters, without building the whole repr of a huge value;
    never raises (a value whose repr fails is shown by its type)."""
    try:
        return _ClippedRepr(width).repr(value)[:width]
    except Exception:  # noqa: BLE001  (a detail must never be what fails the judge)
        return f"<{type(value).__name__}>"[:width]


def short_repr(value: Any) -> str:
    """A bounded repr for verdict details."""
    return _short_repr(value)
