"""The one config system of the trainers: typed frozen dataclasses, filled from layers.

Every algorithm and every CPPO stage declares its keys once, as a frozen dataclass whose
defaults are the study's. A run's config is built from layers, later wins: the dataclass
defaults, the preset files that apply (``trainers/configs/*.yaml``: only what differs from the
defaults, e.g. the CPU demo), the user's ``--config FILE``, then each ``--set KEY=VAL`` (or the
Python API's keyword overrides). ``build`` checks every key and value in one place: an unknown
key or a bad value is one ``ConfigError`` line naming its dotted path.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml

from cppo_bench.util.jsonio import read_capped
from cppo_bench.errors import DataError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
MAX_CONFIG_BYTES = 1 << 20  # a config file is a few hundred bytes; 1 MiB is never a real one


class ConfigError(DataError):
    """A bad configuration key or value; the CLI prints the one line."""


class _NoAliasLoader(yaml.SafeLoader):
    """safe_load without anchors/aliases: a config never needs them, and an alias bomb
    (a few hundred bytes naming each other) expands to gigabytes once the config is walked."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D401 (PyYAML's hook)
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.YAMLError(f"aliases are not allowed in a config (line {mark.line + 1})")
        return super().compose_node(parent, index)


def read_preset(path: Path) -> dict[str, Any]:
    """A YAML mapping of config keys (nested for sections); one ConfigError line otherwise."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = read_capped(fh, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read: {exc.strerror or exc}") from None
    if raw is None:
        raise ConfigError(f"config file {path}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = yaml.load(raw.decode("utf-8"), Loader=_NoAliasLoader) or {}  # noqa: S506
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path}: not UTF-8 text") from None
    except (yaml.YAMLError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"config file {path}: not a valid config ({first})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping of keys to values")
    return data


def merge(base: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """``layer`` over ``base``, sections merged key by key (a new dict; inputs untouched)."""
    out = dict(base)
    for key, value in layer.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def coerce(name: str, hint: Any, value: Any) -> Any:
    """``value`` (from YAML, JSON or a keyword) as the field's type, or a ConfigError."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"config {name}: {value!r} is not one of {', '.join(choices)}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return coerce(name, args[0], value)
    if origin in (tuple, list):
        (item,) = typing.get_args(hint)[:1] or (Any,)
        if not isinstance(value, list | tuple):
            raise ConfigError(f"config {name}: expected a list, got {value!r:.60}")
        return tuple(coerce(f"{name}[{i}]", item, v) for i, v in enumerate(value))
    bad = ConfigError(f"config {name}: expected {_type_name(hint)}, got {value!r:.60}")
    if hint is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        if isinstance(value, float) and not value.is_integer():
            raise bad
        return int(value)
    if hint is float:
        if isinstance(value, str):
            try:
                value = float(value)  # YAML reads 5e-7 (no dot) as text
            except ValueError:
                raise bad from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        if not math.isfinite(value):
            raise ConfigError(f"config {name}: must be a finite number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise bad
        return value
    return value


def build(cls: type, values: Mapping[str, Any], where: str = "") -> Any:
    """An instance of the frozen dataclass ``cls`` from ``values`` (nested mappings for
    dataclass-typed fields); unknown keys, bad types and the class's own checks are one line."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"config {where.rstrip('.') or 'file'}: expected a mapping of keys")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in names:
            raise ConfigError(
                f"unknown config key {where}{key!s:.60} (known here: {', '.join(names)})"
            )
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = build(hint, value, f"{where}{key}.")
        else:
            kwargs[key] = coerce(f"{where}{key}", hint, value)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:  # the dataclass's own check
        raise ConfigError(f"config {where.rstrip('.') or cls.__name__}: {exc}") from None


def defaults(cls: type) -> dict[str, Any]:
    """The dataclass's defaults as a nested mapping."""
    return dataclasses.asdict(cls())


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def repeated_defaults(cls: type, layer: Mapping[str, Any], where: str = "") -> list[str]:
    """Keys of ``layer`` that only restate ``cls``'s default (a preset must not: the study's
    value lives in the dataclass once). Unknown keys are reported by ``build``."""
    base = defaults(cls)
    hints = typing.get_type_hints(cls)
    out = []
    for key, value in layer.items():
        if key not in base:
            continue
        if dataclasses.is_dataclass(hints[key]) and isinstance(value, Mapping):
            out += repeated_defaults(hints[key], value, f"{where}{key}.")
        elif value == base[key] or (isinstance(base[key], tuple) and list(base[key]) == value):
            out.append(f"{where}{key}")
    return out
