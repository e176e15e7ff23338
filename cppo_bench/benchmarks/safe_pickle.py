"""Unpickling untrusted benchmark blobs without running anything.

LiveCodeBench ships some hidden tests as base64(zlib(pickle(json-string))). A plain
`pickle.loads` on downloaded data can execute arbitrary code: every callable a pickle can
reach comes through `find_class` (GLOBAL, STACK_GLOBAL, INST, OBJ and the copyreg extension
codes) or `persistent_load`, so refusing both leaves only the data opcodes. The result is
then checked to hold nothing but plain data.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, NoReturn

# Containers and scalars a data-only pickle can hold; tuples, sets and bytearrays are
# refused too: LiveCodeBench blobs never contain them.
PLAIN_TYPES = (str, bytes, int, float, bool, type(None), list, dict)


class UnsafePickleError(ValueError):
    """The pickle names a global or holds something other than plain data."""


class _DataOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> NoReturn:
        raise UnsafePickleError(
            f"pickle names the global {module}.{name}; refused (only plain "
            "str/bytes/list/dict/number data is accepted)"
        )

    def persistent_load(self, pid: Any) -> NoReturn:
        raise UnsafePickleError("pickle uses a persistent id; refused")


def _check_plain(obj: Any) -> None:
    # iterative walk with an id set: memo references can make cycles or very deep nests
    stack, seen = [obj], set()
    while stack:
        item = stack.pop()
        if type(item) not in PLAIN_TYPES:
            raise UnsafePickleError(
                f"pickle holds a {type(item).__name__}; only plain data is accepted"
            )
        if isinstance(item, (list, dict)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(item.keys() if isinstance(item, dict) else ())
            stack.extend(item.values() if isinstance(item, dict) else item)


MAX_OPS = 1_000_000  # opcodes: LiveCodeBench's blobs are one string (a handful of opcodes)
_STRING_OPS = {"BINUNICODE", "SHORT_BINUNICODE", "UNICODE", "BINUNICODE8", "STRING",
               "BINSTRING", "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8"}  # fmt: skip
_CONTAINER_OPS = {"EMPTY_LIST", "EMPTY_DICT", "LIST", "DICT", "EMPTY_TUPLE", "TUPLE", "TUPLE1",
                  "TUPLE2", "TUPLE3", "EMPTY_SET", "FROZENSET"}  # fmt: skip
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}
_PUT_OPS = {"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"}


def _prescan(data: bytes, max_ops: int, max_bytes: int) -> None:
    """Count while decoding: walk the opcodes (nothing is built) and refuse a stream of more
    than `max_ops` opcodes, a memo reference to a container (a shared or cyclic container:
    a few bytes that expand to a huge structure), or strings that, counting each memo
    reference again, hold more than `max_bytes`."""
    import pickletools

    memo: dict[int, int | None] = {}  # memo index -> string length, None for a container
    last: int | None = 0
    total = 0
    try:
        for n, (op, arg, _pos) in enumerate(pickletools.genops(data)):
            if n >= max_ops:
                raise UnsafePickleError(f"more than {max_ops} pickle opcodes")
            name = op.name
            if name in _STRING_OPS:
                last = len(arg)
                total += last
            elif name in _CONTAINER_OPS:
                last = None
            elif name in _PUT_OPS:
                memo[len(memo) if name == "MEMOIZE" else int(arg)] = last
            elif name in _GET_OPS:
                size = memo.get(int(arg), None)
                if size is None:
                    raise UnsafePickleError("pickle shares a container (memo reference); refused")
                last = size
                total += size
            elif name not in ("APPEND", "APPENDS", "SETITEM", "SETITEMS", "MARK"):
                last = 0
            if total > max_bytes:
                raise UnsafePickleError(f"pickle expands to more than {max_bytes >> 20} MiB")
    except UnsafePickleError:
        raise
    except Exception as exc:  # a truncated or corrupt opcode stream
        raise UnsafePickleError(f"not a valid pickle ({type(exc).__name__}: {exc})") from None


def safe_loads(data: bytes, max_ops: int = MAX_OPS, max_bytes: int = 512 << 20) -> Any:
    """Unpickle `data` if it holds only plain data; raise UnsafePickleError otherwise. The
    opcodes are counted before anything is built (`_prescan`)."""
    _prescan(data, max_ops, max_bytes)
    try:
        obj = _DataOnlyUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError:
        raise
    except Exception as exc:  # truncated or corrupt stream: many exception types
        raise UnsafePickleError(f"not a valid pickle ({type(exc).__name__}: {exc})") from None
    _check_plain(obj)
    return obj
