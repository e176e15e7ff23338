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
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainers.harness import builder as typed

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
MAX_CONFIG_BYTES = 1 << 20  # a config file is a few hundred bytes; 1 MiB is never a real one


class ConfigError(typed.BuildError):
    """A bad configuration key or value; the CLI prints the one line."""


def read_preset(path: Path) -> dict[str, Any]:
    """A YAML mapping of config keys (nested for sections); one ConfigError line otherwise."""
    from trainers.harness import userfiles  # the one reader: a FIFO or device is one line

    path = Path(path)
    try:
        raw = userfiles.read_bytes(path, MAX_CONFIG_BYTES)
    except userfiles.UserFileError as exc:
        raise ConfigError(f"config file {exc}") from None
    try:
        # the one YAML loader: aliases refused (an alias bomb expands to gigabytes)
        data = userfiles.load_yaml(raw.decode("utf-8"), str(path)) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path}: not UTF-8 text") from None
    except userfiles.UserFileError as exc:
        raise ConfigError(f"config file {exc}") from None
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


def coerce(name: str, hint: Any, value: Any) -> Any:
    """``value`` (from YAML, JSON or a keyword) as the field's type, or a ConfigError: the
    harness's one typed builder (``cppo_bench.util.builder``), so method options, report specs
    and the train config take the same values."""
    return typed.coerce(name, hint, value, label="config", error=ConfigError)


def build(cls: type, values: Mapping[str, Any], where: str = "") -> Any:
    """An instance of the frozen dataclass ``cls`` from ``values`` (nested mappings for
    dataclass-typed fields); unknown keys, bad types and the class's own checks are one line."""
    return typed.build(cls, values, where, label="config", error=ConfigError)


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
