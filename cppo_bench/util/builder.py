"""The one strict typed builder: frozen dataclasses filled from untrusted mappings.

Method options (``-m KEY=VAL`` or a Python dict), report specs (YAML), the train config
(presets, ``--config``, ``--set``) and the stored run documents (``cppo_bench.store.schema``) all
take their type rules from here, so they cannot disagree: an ``int`` is an integer (never
``true``, never ``3.7`` truncated to 3), a ``float`` is a finite number, a ``bool`` is
``true``/``false`` (never ``1`` or ``"yes"``), a ``Literal`` is one of its values, a tuple is a
list of its item type. A bad key or value is one ``BuildError`` line naming its dotted path.

``from_text=True`` is for callers whose values may still be the text a user typed (the
Python API's method options took ``{"tuple_size": "4"}``): a text value is then read as JSON
first (``cppo_bench.util.keyvals.parse_value``, the CLI's one KEY=VALUE rule) and the result is
checked as strictly as any other value, so ``"4"`` is 4 and ``"3.7"`` is still refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from cppo_bench.errors import DataError
from cppo_bench.util.keyvals import parse_value
from cppo_bench.util.termsafe import quote


class BuildError(DataError):
    """A bad key or value; the message is one line naming its dotted path."""


Error = Callable[[str], Exception]

# what each scalar type is called in a message: (short name, what it must be)
SCALARS: dict[type, tuple[str, str]] = {
    bool: ("bool", "true/false"),
    int: ("int", "an integer"),
    float: ("float", "a number"),
    str: ("str", "text"),
}


def why_not(hint: type, value: Any) -> str | None:
    """None when ``value`` is exactly a ``hint`` (bool, int, float, str) as the builder takes
    it, else why not (a short phrase). No conversion: stored documents are checked with this."""
    if hint is bool:
        ok = type(value) is bool
    elif hint is int:
        ok = type(value) is int  # bool is an int subclass: `true` is not a count
    elif hint is float:
        ok = type(value) in (int, float)
        if ok and not math.isfinite(value):
            return f"must be a finite number, got {quote(value)}"
    elif hint is str:
        ok = isinstance(value, str)
    else:
        raise TypeError(f"why_not: no rule for {quote(hint)}")
    if ok:
        return None
    short, long = SCALARS[hint]
    return f"expected {short}, got {shown(value)} (not {long})"


def shown(value: Any) -> str:
    """A value as the user wrote it in YAML, JSON or KEY=VALUE (`true`, `null`), cut short."""
    text = json.dumps(value) if value is None or isinstance(value, bool) else repr(value)
    return text[:60]


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def coerce(
    name: str,
    hint: Any,
    value: Any,
    *,
    label: str = "config",
    error: Error = BuildError,
    from_text: bool = False,
) -> Any:
    """``value`` as the type ``hint`` (YAML, JSON or a keyword), or ``error("LABEL NAME: why")``."""

    def fail(why: str) -> Exception:
        return error(f"{label} {name}: {why}".lstrip())

    if from_text and isinstance(value, str) and hint is not str:
        value = parse_value(value)
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if not any(value == c and type(value) is type(c) for c in choices):
            raise fail(f"{quote(value)} is not one of {', '.join(map(str, choices))}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return coerce(name, args[0], value, label=label, error=error, from_text=from_text)
    if origin in (tuple, list):
        (item,) = typing.get_args(hint)[:1] or (Any,)
        if not isinstance(value, list | tuple):
            raise fail(f"expected a list, got {quote(value)}")
        return tuple(
            coerce(f"{name}[{i}]", item, v, label=label, error=error, from_text=from_text)
            for i, v in enumerate(value)
        )
    if hint is float and isinstance(value, str):
        try:
            value = float(value)  # YAML reads 5e-7 (no dot) as text
        except ValueError:
            raise fail(why_not(float, value) or "") from None
    if hint in SCALARS:
        why = why_not(hint, value)
        if why:
            raise fail(why)
        return float(value) if hint is float else value
    if hint is Any or hint is object:
        return value
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise fail(f"expected a mapping, got {quote(value)}")
        return dict(value)
    raise TypeError(f"builder: no rule for {name}: {_type_name(hint)}")


def build(
    cls: type,
    values: Mapping[str, Any],
    where: str = "",
    *,
    label: str = "config",
    error: Error = BuildError,
    from_text: bool = False,
) -> Any:
    """An instance of the frozen dataclass ``cls`` from ``values`` (nested mappings for
    dataclass-typed fields); unknown keys, bad types and the class's own checks (a
    ``ValueError``/``TypeError`` from ``__post_init__``) are one ``error`` line."""
    if not isinstance(values, Mapping):
        raise error(f"{label} {where.rstrip('.') or 'file'}: expected a mapping of keys")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in names:
            raise error(f"unknown {label} key {where}{key!s:.60} (known here: {', '.join(names)})")
        hint = hints[key]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            kwargs[key] = build(
                hint, value, f"{where}{key}.", label=label, error=error, from_text=from_text
            )
        else:
            kwargs[key] = coerce(
                f"{where}{key}", hint, value, label=label, error=error, from_text=from_text
            )
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:  # the dataclass's own check
        if isinstance(exc, DataError):
            raise
        raise error(f"{label} {where.rstrip('.') or cls.__name__}: {exc}") from None
