"""What crosses the sandbox boundary: length-prefixed frames, and call results as tagged JSON.

Imported by the verifier and, as a plain file, by the harness inside the sandbox, so it uses
the standard library only. Nothing that comes out of the sandbox is ever unpickled or
evaluated: a frame is a JSON header plus raw bytes, a call result is data.

Call results are encoded with their Python types (tuple, set, dict with int keys, ...)
because the official checkers compare with Python `==`; anything that is not plain data (an
object with a custom `__eq__`, an ndarray) becomes `Unrepresentable`, which equals nothing.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Callable, Iterator
from typing import Any

HEAD = struct.Struct(">II")  # header length, payload length
MAX_DEPTH = 100


def write_frame(fd: int, head: dict, parts: list[bytes] | None = None) -> None:
    parts = parts or []
    head = dict(head, parts=[len(p) for p in parts])
    raw = json.dumps(head).encode()
    data = b"".join([HEAD.pack(len(raw), sum(len(p) for p in parts)), raw, *parts])
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, n: int) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            raise EOFError("peer closed the channel")
        got += k
    return buf


def read_frame(fd: int) -> tuple[dict, bytearray]:
    n_head, n_payload = HEAD.unpack(read_exact(fd, HEAD.size))
    head = json.loads(read_exact(fd, n_head))
    return head, read_exact(fd, n_payload)


def split_parts(head: dict, payload: bytes) -> list[bytes]:
    out, pos = [], 0
    for n in head.get("parts", []):
        out.append(bytes(payload[pos : pos + n]))
        pos += n
    return out


# ---- call results ----------------------------------------------------------------------------


class Unrepresentable:
    """Stands for a returned value that is not plain data; it equals nothing, not even itself."""

    __hash__ = object.__hash__

    def __init__(self, what: str) -> None:
        self.what = what

    def __eq__(self, other: object) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<unrepresentable {self.what}>"


# Size caps of the numbers below (a value past them is Unrepresentable: it equals nothing).
# No expected value can be that large: the host parses expected JSON with Python's default
# 4300-digit limit for ints (~14300 bits), and a float is at most 2**1024.
MAX_INT_BITS = 1 << 20
MAX_DECIMAL_DIGITS = 1 << 16
PLAIN_INT_BITS = 4000  # larger ints travel as hex (int <-> decimal str is quadratic)


# each sequence type: its tag on the wire (a list is a JSON list) and its own __iter__
_SEQUENCES: dict[type, tuple[str | None, Callable[[Any], Iterator[Any]]]] = {
    list: (None, list.__iter__),
    tuple: ("t", tuple.__iter__),
    set: ("s", set.__iter__),
    frozenset: ("f", frozenset.__iter__),
}


def encode_value(v: Any, depth: int = 0) -> Any:
    """Python value -> JSON-able tagged form. Uses the base types' own methods so that a
    subclass cannot lie about its contents (e.g. a str subclass with a custom __eq__).

    Every value type that can be `==` to a JSON value under Python's rules travels with what
    decides that equality: ints of any size (hex past PLAIN_INT_BITS), Fraction (numerator,
    denominator), Decimal (sign, digits, exponent), complex, numpy scalars, and the
    collections.User* wrappers, which compare as the data they wrap."""
    if depth > MAX_DEPTH:
        return {"u": "nested too deep"}
    if v is None or type(v) in (bool, str, float):
        return v
    if type(v).__module__ == "numpy":
        scalar = _numpy_scalar(v)
        if scalar is not None:
            return scalar
    if type(v) is int:
        return _int(v)
    if isinstance(v, bool):
        return bool(int.__int__(v))
    if isinstance(v, int):
        return _int(int.__int__(v))
    if isinstance(v, float):
        return float.__float__(v)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, (bytes, bytearray)):
        return {"b": bytes(v).decode("latin-1")}
    if isinstance(v, (list, tuple, set, frozenset)):
        # the base type's own __iter__ (C), whatever a subclass overrides
        tag, walk = next((t, it) for base, (t, it) in _SEQUENCES.items() if isinstance(v, base))
        items = [encode_value(x, depth + 1) for x in walk(v)]
        return items if tag is None else {tag: items}
    if isinstance(v, dict):
        return {
            "d": [
                [encode_value(k, depth + 1), encode_value(x, depth + 1)] for k, x in dict.items(v)
            ]
        }
    if isinstance(v, complex):
        # complex's own (C) parts, whatever a subclass overrides (complex.__complex__, used
        # here before, is 3.11+: an AttributeError on 3.10)
        return {"c": [complex.real.__get__(v), complex.imag.__get__(v)]}
    number = _number(v)
    if number is not None:
        return number
    kind = type(v)
    wrapped = _user_wrapper(v)
    if wrapped is not None:
        return encode_value(wrapped[0], depth + 1)
    return {"u": kind.__name__}


# numpy scalar kinds that travel as themselves: bool, ints, floats (longdouble too),
# complex (clongdouble too), datetime64 / timedelta64. np.str_ / np.bytes_ are str / bytes.
NUMPY_KINDS = "biufcmM"


def _numpy_scalar(v: Any) -> Any:
    """A numpy scalar (numpy's own type, never a program's subclass) as {"n": "dtype:hex"}:
    its dtype and its bytes, so that the verifier rebuilds the very same scalar and compares
    it with numpy's own `==`, as the official checkers do under the numpy the sandbox runs
    (float32 by numpy 2's rules, longdouble and clongdouble, whose `.item()` is themselves)."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not isinstance(v, numpy.generic):
        return None
    dtype = numpy.generic.__dict__["dtype"].__get__(v)
    if dtype.kind not in NUMPY_KINDS:
        return None
    raw = numpy.generic.tobytes(v)
    return {"n": f"{dtype.str}:{raw.hex()}"}


def _int(v: int) -> Any:
    bits = v.bit_length()
    if bits < PLAIN_INT_BITS:
        return v
    return {"i": format(v, "x")} if bits <= MAX_INT_BITS else {"u": "int too large"}


def _number(v: Any) -> Any:
    """Fraction and Decimal (only if the program imported them: a value of theirs cannot
    exist otherwise), read from the base class's own slots, never the program's methods."""
    fractions = sys.modules.get("fractions")
    if fractions is not None and isinstance(v, fractions.Fraction):
        slots = fractions.Fraction.__dict__
        num = slots["_numerator"].__get__(v)
        den = slots["_denominator"].__get__(v)
        if type(num) is not int or type(den) is not int:
            return {"u": "Fraction"}
        return {"q": [_int(num), _int(den)]}
    decimal = sys.modules.get("decimal")
    if decimal is not None and isinstance(v, decimal.Decimal):
        sign, digits, exp = decimal.Decimal.as_tuple(v)
        if not isinstance(exp, int):  # NaN, sNaN, Infinity
            return {"D": decimal.Decimal.__str__(v)}
        text = "".join(map(str, digits)).rstrip("0")  # trailing zeros move to the exponent
        exp += len(digits) - len(text)
        if len(text) > MAX_DECIMAL_DIGITS:
            return {"u": "Decimal too long"}
        return {"D": f"{'-' if sign else ''}{text or '0'}E{exp}"}
    return None


def _user_wrapper(v: Any) -> tuple | None:
    """(what it compares as,) for collections.UserList / UserString / UserDict and a
    mappingproxy: their `==` is that of the data they hold."""
    collections = sys.modules.get("collections")
    if collections is None:
        return None
    if isinstance(v, (collections.UserList, collections.UserString)):
        return (object.__getattribute__(v, "data"),)
    if isinstance(v, collections.UserDict):
        return (dict(object.__getattribute__(v, "data")),)
    if type(v) is type(type.__dict__):  # mappingproxy
        return (dict(v),)
    return None
