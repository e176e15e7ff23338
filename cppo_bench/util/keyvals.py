"""The one KEY=VALUE parser of the whole CLI (`run -o/-m/-b`, `data -o`, `train --set`).

A VALUE that parses as JSON (``200``, ``true``, ``null``, ``[1, 2]``, ``"text"``) is that value;
anything else (``release_v6``, ``2025-02-01``, ``yes``) stays the text it is: no YAML coercion
of ``yes``/``no`` or dates. Keys may be dotted (``rm.epochs=3``) where the caller allows it. A
key given twice is an error: which one wins would otherwise depend on the order of the line.
JSON's ``NaN`` and ``Infinity`` are refused: no setting of this toolkit is meant to be either.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cppo_bench.errors import KeyValueError
from cppo_bench.util.termsafe import quote


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def parse_value(raw: str) -> Any:
    """``raw`` as JSON where it parses as JSON, else the text itself."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return raw


def parse_pairs(pairs: tuple[str, ...] | list[str], dotted: bool = False) -> dict[str, Any]:
    """``KEY=VALUE`` pairs -> {key: value}; dotted keys stay flat (``"rm.epochs"``)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        parts = key.split(".") if dotted else [key]
        if not sep or not all(p.isidentifier() for p in parts):
            raise KeyValueError(f"{quote(pair[:80])}: expected KEY=VALUE")
        if key in out:
            raise KeyValueError(f"{key} given twice")
        value = parse_value(raw)
        if not _finite(value):
            raise KeyValueError(f"{key}: {quote(raw[:40])} is not a finite number")
        out[key] = value
    return out


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"rm.epochs": 3, "m": 4}`` -> ``{"rm": {"epochs": 3}, "m": 4}``; a key that is both a
    value and a section (``rm=1`` with ``rm.epochs=3``) is an error."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        *heads, last = key.split(".")
        node = out
        for i, head in enumerate(heads):
            node = node.setdefault(head, {})
            if not isinstance(node, dict):
                raise KeyValueError(f"{'.'.join(heads[: i + 1])} is both a value and a section")
        if last in node and isinstance(node[last], dict) != isinstance(value, dict):
            raise KeyValueError(f"{key} is both a value and a section")
        node[last] = value
    return out
