"""Pipeline settings: the nested YAML of trainers/configs/cppo.yaml, layered and validated.

Layers, later wins: cppo.yaml (the study), cppo.demo.yaml (when asked), --config FILE, then
dotted ``--set`` keys (``rm.epochs=3``, ``m=4``, ``tau=null``). Unknown keys are one-line errors
naming the key; stage sections are checked when the stage builds its config.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from cppo_bench.problem import Problem
from trainers.engine.config import CONFIG_DIR, ConfigError, parse_sets, read_yaml

TOP = ("k", "m", "tau", "ablation", "planner_max_tokens", "problem_ids")
SECTIONS = ("sft", "rm", "engine", "warmup", "audit", "joint")


def _merge(base: dict[str, Any], layer: dict[str, Any], where: str) -> None:
    for key, value in layer.items():
        if key not in base and where == "":
            if key not in TOP and key not in SECTIONS:
                raise ConfigError(
                    f"unknown cppo config key {key!r} (known: {', '.join(TOP + SECTIONS)})"
                )
        if isinstance(value, dict):
            if key not in SECTIONS:
                raise ConfigError(f"cppo config {where}{key}: expected a value, got a mapping")
            base.setdefault(key, {})
            base[key].update(value)
        else:
            if key in SECTIONS:
                raise ConfigError(f"cppo config {key}: expected a mapping of keys")
            base[key] = value


def _dotted(sets: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in sets.items():
        head, _, rest = key.partition(".")
        if rest:
            out.setdefault(head, {})[rest] = value
        else:
            out[head] = value
    return out


def load_settings(config_file: Path | None, sets: tuple[str, ...], demo: bool) -> dict[str, Any]:
    layers = [read_yaml(CONFIG_DIR / "cppo.yaml")]
    if demo:
        layers.append(read_yaml(CONFIG_DIR / "cppo.demo.yaml"))
    if config_file is not None:
        layers.append(read_yaml(config_file))
    layers.append(_dotted(parse_sets(sets)))
    merged: dict[str, Any] = {}
    for layer in layers:
        _merge(merged, copy.deepcopy(layer), "")
    for s in SECTIONS:
        merged.setdefault(s, {})
    return merged


def take(section: dict[str, Any], keys: dict[str, Any], name: str) -> dict[str, Any]:
    """``keys`` (name -> default) from ``section``; any other key is an error naming it."""
    bad = sorted(set(section) - set(keys))
    if bad:
        raise ConfigError(f"unknown key {name}.{bad[0]} (known: {', '.join(sorted(keys))})")
    return {k: section.get(k, v) for k, v in keys.items()}


def select_problems(problems: list[Problem], ids: list[str] | None) -> list[Problem]:
    """The training pool restricted to ``ids``, in that order (``None``: every problem)."""
    if not ids:
        return problems
    by_id = {p.problem_id: p for p in problems}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ConfigError(f"config problem_ids: {missing[0]!r} is not in the training set")
    return [by_id[i] for i in ids]
