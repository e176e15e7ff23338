"""`cppo-bench data`: a benchmark's problems, as the loaders read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.benchmarks.load import load_result
from cppo_bench.benchmarks.loadreport import load_line
from cppo_bench.problem import Problem

__all__ = ["load_benchmark", "load_line", "load_result"]


def load_benchmark(
    name: str,
    data: str | Path | None = None,
    *,
    limit: int | None = None,
    strict: bool = False,
    **options: Any,
) -> list[Problem]:
    """The problems of benchmark `name` (see `cppo-bench data list`), from `data` (a local
    file or folder) or, without it, the benchmark's hub dataset (`demo` ships with the
    package). `options` are the loader options `-o KEY=VALUE` sets on the command line, e.g.
    ``difficulty="easy"``. Malformed records are skipped (``strict=True``: stop at the first);
    `load_result` also returns them."""
    return load_result(name, data, limit=limit, strict=strict, **options).problems
