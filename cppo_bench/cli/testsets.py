"""`--tests DIR`: judge with an augmented test set (cppo-bench augment) as well as the
problems' own tests. Shared by the commands that judge programs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cppo_bench.util.termsafe import echo, quote

F = TypeVar("F", bound=Callable[..., Any])


def tests_option(func: F) -> F:
    return click.option(
        "--tests",
        "tests_dir",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="Augmented test set (made by `cppo-bench augment`): its tests are added to each "
        "problem's own. A run judged with it is a different run.",
    )(func)


def load_tests(tests_dir: Path | None, bench: str) -> Any:
    """The TestSet in `tests_dir` (None without one); a set for another benchmark is refused."""
    if tests_dir is None:
        return None
    from cppo_bench.augment.store import read_test_set

    ts = read_test_set(tests_dir)
    if ts.bench != bench:
        raise click.ClickException(
            f"{tests_dir}: a test set for {quote(ts.bench)}, not for --bench {quote(bench)}"
        )
    return ts


def apply_tests(problems: list, ts: Any) -> list:
    """The problems with the set's tests added; says on stderr how many problems it covers
    (a set made from other data covers none, which must not pass unnoticed)."""
    if ts is None:
        return problems
    from cppo_bench.augment.store import with_tests
    from cppo_bench.util.termsafe import safe

    out = with_tests(problems, ts)
    covered = [p for p, q in zip(problems, out, strict=True) if p is not q]
    added = sum(len(q.tests) - len(p.tests) for p, q in zip(problems, out, strict=True))
    marked = ", model-written oracle" if ts.config.get("oracle") == "model" else ""
    echo(f"test set {safe(ts.path)} ({ts.hash()[:12]}{marked}): {added} tests added to "
               f"{len(covered)} of {len(problems)} problems", err=True)  # fmt: skip
    if problems and not covered:
        raise click.ClickException(f"{ts.path}: none of its problems is in the data loaded")
    return out
