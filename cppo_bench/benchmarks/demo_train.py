"""The shipped `demo_train` benchmark: 50 original easy problems for training demos
(44 stdin, 6 call-based).

Written for this project (built by cppo_bench/benchmarks/build_demo_train.py: every expected output is the
reference's own), disjoint from `demo` so a model trained here is evaluated on unseen
problems; each has a reference solution and six tests. `cppo-bench train` uses it when
no training set is given.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from cppo_bench.benchmarks.demo import load_problem_jsonl
from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.files import userfiles
from cppo_bench.problem import LoadResult

PACKAGED_FILE = "demo_train_problems.jsonl"


def packaged_path() -> Path:
    return Path(str(resources.files("cppo_bench.benchmarks").joinpath(PACKAGED_FILE)))


def load_demo_train(
    data: str | Path | None = None, *, strict: bool = False, **options: Any
) -> LoadResult:
    """The packaged problems (`data=None`) or a JSONL of Problem dicts."""
    options.pop("split", None)  # one split only: training
    if options:
        raise DataError(f"demo_train benchmark: unknown option(s): {', '.join(sorted(options))}")
    path = packaged_path() if data is None else Path(data)
    if not userfiles.is_file(path):
        raise DataError(f"{path}: no such file (demo_train reads a JSONL of Problem dicts)")
    return load_problem_jsonl(path, strict=strict)


SPEC = BenchmarkSpec(
    name="demo_train",
    description="50 original easy training problems shipped with cppo-bench (disjoint from demo)",
    load=load_demo_train,
    evaluate_with=("--bench", "demo"),
)
