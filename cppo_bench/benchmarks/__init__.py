"""Benchmark loaders, one module per benchmark, registered by name.

`load_benchmark("apps", data="path/or/None")` returns a LoadResult of Problems. With
`data=None` a loader reads the study's Hugging Face dataset; offline it fails with
one line saying what to pass as `--data`.
"""

from __future__ import annotations

from typing import Any

from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.problem import LoadResult
from cppo_bench.util.registry import Registry

BENCHMARKS: Registry[BenchmarkSpec] = Registry(
    "benchmark",
    lazy={
        "apps": "cppo_bench.benchmarks.apps:SPEC",
        "codecontests": "cppo_bench.benchmarks.codecontests:SPEC",
        "lcb": "cppo_bench.benchmarks.livecodebench:SPEC",
        "lcb_execution": "cppo_bench.benchmarks.lcb_execution:SPEC",
        "lcb_output_prediction": "cppo_bench.benchmarks.lcb_output_prediction:SPEC",
        "demo": "cppo_bench.benchmarks.demo:SPEC",
        "demo_train": "cppo_bench.benchmarks.demo_train:SPEC",
        "strategies": "cppo_bench.benchmarks.strategies:SPEC",
    },
    # LiveCodeBench's and the hub's own spellings
    aliases={"livecodebench": "lcb", "code_contests": "codecontests"},
)


def load_benchmark(
    name: str,
    data: str | None = None,
    *,
    limit: int | None = None,
    strict: bool = False,
    **options: Any,
) -> LoadResult:
    """Load benchmark `name` from `data` (a local path) or its hub dataset."""
    spec = BENCHMARKS.get(name)
    result = spec.load(data, strict=strict, **options)
    if limit is not None:
        result.problems = result.problems[:limit]
    return result


def require_problems(result: LoadResult, bench: str) -> LoadResult:
    """`result` if it holds a problem; else DataError with one line naming the source and,
    when records were skipped, how many and the first reason (an empty table exiting 0 reads
    like success)."""
    if result.problems:
        return result
    where = result.source or bench
    if result.errors:
        first = result.errors[0]
        raise DataError(
            f"{where}: no usable {bench} problems ({len(result.errors)} record(s) skipped; "
            f"first: record {first.record_id}: {first.reason})"
        )
    if result.dropped:  # every record was filtered out: say by what
        why = "; ".join(f"{n} {reason}" for reason, n in result.dropped.items())
        raise DataError(f"{where}: no {bench} problems left ({why})")
    raise DataError(f"{where}: no {bench} problems found")
