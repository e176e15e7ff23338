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


def encode_value(v: Any, depth: int = 0) -> Any:
    """Python value -> JSON-able tagged form. Uses the base types' own methods so that a
    subclass cannot lie about its contents (e.g. a str subclass with a custom __eq__)."""
    if depth > MAX_DEPTH:
        return {"u": "nested too deep"}
    if v is None or type(v) in (bool, str, float) or (type(v) is int and _printable(v)):
        return v
    if isinstance(v, bool):
        return bool(int.__int__(v))
    if isinstance(v, int):
        return int.__int__(v) if _printable(v) else {"u": "int too large"}
    if isinstance(v, float):
        return float.__float__(v)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, (bytes, bytearray)):
        return {"b": bytes(v).decode("latin-1")}
    if isinstance(v, (list, tuple, set, frozenset)):
        base = next(t for t in (list, tuple, set, frozenset) if isinstance(v, t))
        items = [encode_value(x, depth + 1) for x in base.__iter__(v)]
        tag = {list: None, tuple: "t", set: "s", frozenset: "f"}[base]
        return items if tag is None else {tag: items}
    if isinstance(v, dict):
        return {
            "d": [
                [encode_value(k, depth + 1), encode_value(x, depth + 1)] for k, x in dict.items(v)
            ]
        }
    kind = type(v)
    if kind.__module__ == "numpy" and kind.__name__ != "ndarray" and hasattr(v, "item"):
        return encode_value(v.item(), depth + 1)  # numpy scalar -> Python scalar
    return {"u": kind.__name__}


def _printable(v: int) -> bool:
    return v.bit_length() < 13000  # below Python's default int<->str digit limit
