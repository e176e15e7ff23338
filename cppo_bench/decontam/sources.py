"""Turning a command-line source spec into a Source.

A spec is `BENCH` (the registered benchmark from its default location), `BENCH=PATH` (that
benchmark's loader reading a local copy) or `PATH` (a JSONL file of Problem dicts, e.g. the
output of `cppo-bench data show --json` or of an earlier `decontam`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.decontam.overlap import Role, Source
from cppo_bench.errors import DataError
from cppo_bench.problem import LoadResult, RecordError, load_problem_jsonl
from cppo_bench.util.termsafe import quote


def _load_jsonl(path: Path, strict: bool) -> LoadResult:
    return load_problem_jsonl(path, strict=strict)


def _load_benchmark(
    spec: str, name: str, data: str | None, strict: bool, options: dict[str, Any] | None = None
) -> LoadResult:
    try:
        return load_benchmark(name, data=data, strict=strict, **(options or {}))
    except ModuleNotFoundError as exc:  # a loader, or a library it needs, is not installed
        raise DataError(f"{spec}: benchmark {quote(name)} cannot be loaded: {exc}") from None


def load_source(
    spec: str, role: Role, *, strict: bool = False, options: dict[str, Any] | None = None
) -> tuple[Source, list[RecordError]]:
    """Load one spec; returns the Source and the records its loader had to skip."""
    source, result = load_source_result(spec, role, strict=strict, options=options)
    return source, result.errors


def load_source_result(
    spec: str, role: Role, *, strict: bool = False, options: dict[str, Any] | None = None
) -> tuple[Source, LoadResult]:
    """Load one spec with loader `options` (a benchmark spec only: a JSONL file of Problem
    dicts has no loader options); returns the Source and the whole LoadResult (what was
    skipped and filtered, for the read / kept / dropped line)."""
    name, sep, data = spec.partition("=")
    if sep and name in BENCHMARKS:
        if not data:
            raise DataError(f"{spec}: empty path after '='")
        result = _load_benchmark(spec, name, data, strict, options)
    elif not sep and spec in BENCHMARKS and not Path(spec).is_file():
        name = spec
        result = _load_benchmark(spec, spec, None, strict, options)
    elif Path(spec).is_file():
        name = Path(spec).stem
        result = _load_jsonl(Path(spec), strict)
    else:
        known = ", ".join(BENCHMARKS.names())
        raise DataError(
            f"{spec}: not a file and not a benchmark name (BENCH, BENCH=PATH or a JSONL file of "
            f"Problem dicts; benchmarks: {known})"
        )
    return Source(name=name, role=role, problems=result.problems, origin=spec), result


def unique_labels(sources: list[Source]) -> list[Source]:
    """Rename repeated labels (`train:apps`, `train:apps#2`) so report keys stay distinct."""
    seen: dict[str, int] = {}
    out = []
    for s in sources:
        n = seen.get(s.label, 0) + 1
        seen[s.label] = n
        out.append(s if n == 1 else Source(f"{s.name}#{n}", s.role, s.problems, s.origin))
    return out
