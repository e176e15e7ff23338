"""Spec keys beyond the grid basics (parsed here to keep specs.py small):

- ``study``: the captions of the study's tables / figures a spec reproduces (listed by
  ``report --check``); a figure entry may carry its own ``study`` too;
- ``fill``: for tables not filled from runs, what fills them (shown by ``--check``);
- ``external``: cells taken from a published source, not from runs: a point estimate and
  the source's own uncertainty (None when it reports none). They are footnoted and never
  enter a significance test (the study does the same for its external Gemma cells);
- ``problems``: the problems a qualitative-examples table shows, named before any run
  (never chosen by outcome);
- comparisons with ``strongest`` instead of ``b``: per cell, B is the baseline with the
  highest mean of that cell (the study's per-seed table: CPPO minus strongest baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import quote


@dataclass(frozen=True)
class ExternalCell:
    row: str  # the row label it fills
    model: str
    bench: str
    value: float
    spread: float | None  # the source's uncertainty; None: the source reports none
    source: str


@dataclass(frozen=True)
class ExampleProblem:
    bench: str
    problem_id: str


def _mapping(path: str, where: str, data: Any, required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise DataError(f"{path}: {where}: expected a mapping, got {quote(data)}")
    for key in required:
        if key not in data:
            raise DataError(f"{path}: {where}.{key}: required key missing")
    return data


def parse_study(path: str, data: Any) -> tuple[str, ...]:
    if data is None:
        return ()
    items = [data] if isinstance(data, str) else data
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise DataError(f"{path}: study: expected a caption or a list of captions")
    return tuple(items)


def parse_external(path: str, data: Any) -> tuple[ExternalCell, ...]:
    out = []
    for i, item in enumerate(data or []):
        where = f"external[{i}]"
        d = _mapping(path, where, item, ("row", "model", "bench", "value", "source"))
        spread = d.get("spread")
        if not isinstance(d["value"], (int, float)) or (
            spread is not None and not isinstance(spread, (int, float))
        ):
            raise DataError(f"{path}: {where}: value and spread must be numbers")
        out.append(
            ExternalCell(
                str(d["row"]),
                str(d["model"]),
                str(d["bench"]),
                float(d["value"]),
                None if spread is None else float(spread),
                str(d["source"]),
            )
        )
    return tuple(out)


def parse_problems(path: str, data: Any) -> tuple[ExampleProblem, ...]:
    out = []
    for i, item in enumerate(data or []):
        d = _mapping(path, f"problems[{i}]", item, ("bench", "problem_id"))
        out.append(ExampleProblem(str(d["bench"]), str(d["problem_id"])))
    return tuple(out)
