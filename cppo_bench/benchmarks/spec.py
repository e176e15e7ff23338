"""What a benchmark is to the harness: its loader and where its data lives (a leaf, so a
benchmark's module imports it without importing the package front that lists it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cppo_bench.problem import LoadResult


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    description: str
    # load(data, *, strict, **options) -> LoadResult; options are loader-specific
    # (e.g. APPS difficulty/subset, LCB release/date window).
    load: Callable[..., LoadResult]
    hub_id: str | None = None
    default_split: str | None = None
    # where a model trained on this benchmark is evaluated: `cppo-bench run` arguments (the
    # held-out problems: demo_train -> --bench demo; a generated task -> its held-out split);
    # None: the same benchmark
    evaluate_with: tuple[str, ...] | None = None
