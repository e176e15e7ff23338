"""The one loader entry of the harness: a benchmark by name as the loaders return it, checked
for what a run needs. `cppo_bench.load_benchmark`, `cppo-bench run` and `cppo-bench data`
all load through here; what was dropped and why is told by `benchmarks.loadreport`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.problem import LoadResult
from cppo_bench.util.termsafe import quote


def load_result(
    name: str,
    data: str | Path | None = None,
    *,
    limit: int | None = None,
    strict: bool = False,
    unique: bool = True,
    **options: Any,
) -> LoadResult:
    """Benchmark `name` as the loaders return it: the problems, plus the skipped records and
    notes that `cppo-bench data show` reports. A source without a usable problem, or (with
    `unique`, as a run needs) with a problem id twice, is a DataError naming it."""
    from cppo_bench.benchmarks import load_benchmark as load
    from cppo_bench.benchmarks import require_problems

    data = None if data is None else str(data)
    result = require_problems(load(name, data, limit=limit, strict=strict, **options), name)
    ids = [p.problem_id for p in result.problems]
    if unique and len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"{result.source or name}: problem id {quote(dup)} appears twice")
    return result
