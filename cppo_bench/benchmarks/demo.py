"""The shipped `demo` benchmark: 32 original problems written for this toolkit.

They are the embedded default for offline, CPU-only runs and for CI, in three tiers
(`-o difficulty=easy|medium|hard`). The easy tier comes first, so `--limit 5` runs it: one-line
tasks (add two numbers, reverse a string) that the embedded 135M model solves some of the
time, so a run of the default set-up shows a non-zero pass@K and methods that differ; on the
medium and hard tiers it scores zero. Over half read standard input, the rest are call-based.
The records are stored as Problem dicts (`Problem.to_dict()`), one per line, so
`cppo_bench.problem.load_problem_jsonl` reads any file of that schema (e.g. `cppo-bench data show --json`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.files import userfiles
from cppo_bench.problem import LoadResult, load_problem_jsonl

PACKAGED_FILE = "demo_problems.jsonl"


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

    `difficulty` keeps only problems with that label (easy | medium | hard; all: every one)."""
    if options:
        raise DataError(f"demo benchmark: unknown option(s): {', '.join(sorted(options))}")
    path = packaged_path() if data is None else Path(data)
    if data is not None and not userfiles.is_file(path):
        raise DataError(f"{path}: no such file (the demo benchmark reads a JSONL of Problem dicts)")
    result = load_problem_jsonl(path, strict=strict)
    if difficulty not in (None, "", "all"):
        kept = [p for p in result.problems if p.difficulty == difficulty]
        if len(kept) < len(result.problems):  # counted, so the loader's line says why
            result.dropped[f"difficulty is not {difficulty}"] = len(result.problems) - len(kept)
        result.problems = kept
    return result


SPEC = BenchmarkSpec(
    name="demo",
    description="32 original problems shipped with cppo-bench (easy / medium / hard tiers)",
    load=load_demo,
)
