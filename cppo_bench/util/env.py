"""The one reader of the environment: every variable cppo-bench and its trainers read goes
through here, typed, checked and clamped.

An environment variable is input like any other (a job script, a cluster's module file, a
colleague's shell profile), so it gets what a bad file gets: one line naming the variable,
its value (quoted in part) and what it must be, never a traceback, and never a value that
turns the tool against itself (`CPPO_BENCH_PROGRESS_INTERVAL=1e-300` wrote 17,000 progress
lines in 5 s: a number below its floor is raised to the floor). Standard library only: the
verifier's sandbox side reads its switches here too. `tests/util/test_env_reader.py` walks
the code and fails on any `os.environ` / `os.getenv` read made around this module.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from urllib.parse import urlparse

from cppo_bench.errors import DataError

__all__ = [
    "EnvError", "flag", "integer", "number", "optional_integer", "path", "raw", "text", "url",
    "world_size",
]  # fmt: skip
MAX_WORLD = 1 << 20  # processes in one launch (WORLD_SIZE, NNODES)

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
MAX_SHOWN = 80  # characters of a bad value an error quotes


class EnvError(DataError):
    """An environment variable whose value cannot be used; one line naming it."""


def _bad(name: str, value: str, what: str) -> EnvError:
    shown = repr(value[:MAX_SHOWN]) + ("..." if len(value) > MAX_SHOWN else "")
    return EnvError(f"environment variable {name}={shown}: expected {what}")


def raw(name: str) -> str | None:
    """The variable as set (None when unset): for values passed on unread, such as a
    library's own switch or a child's environment."""
    return os.environ.get(name)


def text(name: str, default: str | None = None) -> str | None:
    """The value with surrounding blanks removed; unset or blank: `default`."""
    value = (os.environ.get(name) or "").strip()
    return value or default


def flag(name: str, default: bool) -> bool:
    """1/true/yes/on or 0/false/no/off (any case); unset or blank: `default`."""
    value = text(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise _bad(name, value, f"one of {'/'.join(_TRUE)} or {'/'.join(_FALSE)}")


def number(name: str, default: float, floor: float, ceiling: float = math.inf) -> float:
    """A finite number; below `floor` it is raised to `floor`, above `ceiling` lowered to it
    (a setting that would flood a log or spin a loop is clamped, not obeyed)."""
    value = text(name)
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        parsed = math.nan
    if not math.isfinite(parsed):
        raise _bad(name, value, "a finite number")
    return min(max(parsed, floor), ceiling)


def integer(name: str, default: int, lo: int, hi: int) -> int:
    """An integer in lo..hi (out of range is one line: a count is not silently changed)."""
    found = optional_integer(name, lo, hi)
    return default if found is None else found


def optional_integer(name: str, lo: int, hi: int) -> int | None:
    """`integer`, None when unset."""
    value = text(name)
    if value is None:
        return None
    try:
        parsed = int(value)
    except ValueError:
        raise _bad(name, value, f"an integer in {lo}..{hi}") from None
    if not lo <= parsed <= hi:
        raise _bad(name, value, f"an integer in {lo}..{hi}")
    return parsed


def path(name: str, default: Path | None = None) -> Path | None:
    """A path (~ expanded)."""
    value = text(name)
    if value is None:
        return default
    return Path(value).expanduser()


def url(name: str, default: str) -> str:
    """An http(s) URL with a host (and a port in range), e.g. HF_ENDPOINT."""
    value = text(name, default) or default
    try:
        parts = urlparse(value)
        port = parts.port  # raises ValueError on a port that is not a number in 0..65535
    except ValueError:
        raise _bad(name, value, "an http(s) URL such as https://huggingface.co") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise _bad(name, value, "an http(s) URL such as https://huggingface.co")
    return value


def world_size(name: str = "WORLD_SIZE") -> int:
    """Processes a launcher started (WORLD_SIZE; NNODES for machines): 1 when unset."""
    return integer(name, 1, 1, MAX_WORLD)
