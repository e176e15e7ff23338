"""An augmented test set (`cppo-bench augment`) added to the problems a command judges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import quote, safe


def read_tests(tests: str | Path | Any | None, bench: str) -> Any:
    """The TestSet in folder `tests` (None without one; a TestSet object as it is); a set
    made for another benchmark is refused in one line."""
    if tests is None:
        return None
    from cppo_bench.augment.store import read_test_set

    test_set = read_test_set(Path(tests)) if isinstance(tests, str | Path) else tests
    if test_set.bench != bench:
        raise DataError(
            f"{test_set.path}: a test set for {quote(test_set.bench)}, not for {quote(bench)}"
        )
    return test_set


def add_tests(problems: list[Problem], test_set: Any) -> tuple[list[Problem], str | None]:
    """The problems with the set's tests added, and the line that says how many problems it
    covers (a set made from other data covers none: refused, never passed unnoticed)."""
    if test_set is None:
        return problems, None
    from cppo_bench.augment.store import with_tests

    out = with_tests(problems, test_set)
    covered = sum(p is not q for p, q in zip(problems, out, strict=True))
    added = sum(len(q.tests) - len(p.tests) for p, q in zip(problems, out, strict=True))
    marked = ", model-written oracle" if test_set.config.get("oracle") == "model" else ""
    if problems and not covered:
        raise DataError(f"{test_set.path}: none of its problems is in the data loaded")
    line = (f"test set {safe(test_set.path)} ({test_set.hash()[:12]}{marked}): {added} tests "
            f"added to {covered} of {len(problems)} problems")  # fmt: skip
    return out, line
