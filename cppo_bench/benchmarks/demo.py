"""The shipped `demo` benchmark: 32 original problems written for this toolkit.

They are the embedded default for offline, CPU-only runs and for CI, in three tiers
(`-o difficulty=easy|medium|hard`). The easy tier comes first, so `--limit 5` runs it: one-line
tasks (add two numbers, reverse a string) that the embedded 135M model solves some of the
time, so a run of the default set-up shows a non-zero pass@K and methods that differ; on the
medium and hard tiers it scores zero. Over half read standard input, the rest are call-based.
The records are stored as Problem dicts (`Problem.to_dict()`), one per line, so
`load_problem_jsonl` also reads any file of that schema (e.g. `cppo-bench data show --json`).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from cppo_bench.benchmarks import BENCHMARKS, BenchmarkSpec
from cppo_bench.problem import DataError, LoadResult, Problem, RecordError

PACKAGED_FILE = "demo_problems.jsonl"


def _record_id(record: Any, lineno: int) -> str:
    if isinstance(record, dict) and record.get("problem_id"):
        return f"{record['problem_id']} (line {lineno})"
    return f"line {lineno}"


def _parse_record(record: Any) -> Problem:
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    missing = [k for k in ("benchmark", "problem_id", "statement", "tests") if k not in record]
    if missing:
        raise ValueError(f"missing field(s): {', '.join(missing)}")
    try:
        problem = Problem.from_dict(record)
    except TypeError as exc:  # unknown or missing keyword in Problem / Test / SourceIds
        raise ValueError(f"does not match the Problem schema: {exc}") from None
    if not problem.tests:
        raise ValueError("has no tests")
    return problem


def load_problem_jsonl(path: str | Path, *, strict: bool = False) -> LoadResult:
    """Read a JSONL file of Problem dicts. Malformed lines are skipped and reported (with
    their line number and problem id) unless `strict`, which raises DataError on the first."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    problems: list[Problem] = []
    errors: list[RecordError] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record: Any = None
        try:
            record = json.loads(line)
            problem = _parse_record(record)
            if problem.uid in seen:
                raise ValueError(f"duplicate id {problem.uid}")
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            error = RecordError(str(path), _record_id(record, lineno), str(exc))
            if strict:
                raise DataError(str(error)) from None
            errors.append(error)
            continue
        seen.add(problem.uid)
        problems.append(problem)
    return LoadResult(problems=problems, errors=errors, source=str(path))


def packaged_path() -> Path:
    """Where the shipped demo problems live (inside the installed package)."""
    return Path(str(resources.files("cppo_bench.benchmarks").joinpath(PACKAGED_FILE)))


def load_demo(
    data: str | Path | None = None,
    *,
    strict: bool = False,
    difficulty: str | None = None,
    **options: Any,
) -> LoadResult:
    """Load the demo problems (`data=None`: the packaged file) or a JSONL of the same schema.

    `difficulty` keeps only problems with that label (easy | medium | hard)."""
    if options:
        raise DataError(f"demo benchmark: unknown option(s): {', '.join(sorted(options))}")
    path = packaged_path() if data is None else Path(data)
    if data is not None and not path.is_file():
        raise DataError(f"{path}: no such file (the demo benchmark reads a JSONL of Problem dicts)")
    result = load_problem_jsonl(path, strict=strict)
    if difficulty is not None:
        result.problems = [p for p in result.problems if p.difficulty == difficulty]
    return result


SPEC = BENCHMARKS.register("demo")(
    BenchmarkSpec(
        name="demo",
        description="32 original problems shipped with cppo-bench (easy / medium / hard tiers)",
        load=load_demo,
    )
)
