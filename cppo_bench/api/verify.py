"""`cppo-bench verify`: programs against a benchmark's hidden tests, in the sandboxed verifier;
and judging a stored run again."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem

if TYPE_CHECKING:
    from cppo_bench.verifier.records import VerifyResult


def verify(
    problems: Sequence[Problem],
    programs: Sequence[str],
    *,
    workers: int | None = None,
    all_tests: bool = False,
    cache_dir: str | Path | None = None,
    progress: bool = False,
    **limits: Any,
) -> list[VerifyResult]:
    """Verdicts of `programs[i]` on `problems[i]`'s tests, in the sandboxed verifier (a
    program may be a whole model completion: its last Python block is extracted).
    `limits` override the per-test defaults (cppo_bench.verifier.Limits: ``time_s``,
    ``memory_mb``, ``output_mb``, ...); a problem's own limits still take precedence.
    Each verdict has ``verdict`` (AC, WA, TLE, MLE, RE, CE, EMPTY), ``passed``,
    ``tests_passed``, ``tests_total``, ``detail`` and the resources used."""
    from cppo_bench.verifier import Limits, VerifyJob, verify_batch

    if isinstance(programs, str):
        raise DataError("programs: give a sequence of programs, one per problem, not one string")
    if len(problems) != len(programs):
        raise DataError(f"{len(problems)} problems but {len(programs)} programs: give one each")
    known = {f.name for f in dataclasses.fields(Limits)}
    unknown = sorted(set(limits) - known)
    if unknown:
        raise DataError(f"unknown limit(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    jobs = [VerifyJob(p, code) for p, code in zip(problems, programs, strict=True)]
    return verify_batch(
        jobs,
        workers=workers,
        all_tests=all_tests,
        cache_dir=None if cache_dir is None else Path(cache_dir),
        progress=progress,
        limits=Limits(**limits),
    )


def rejudge(run_dir: str | Path, **options: Any) -> Any:
    """Judge a stored run's completions again (today's verifier; ``tests``: an augmented test
    set) into a new run beside it, never changing the stored one; see cppo_bench.runner.rejudge."""
    import inspect

    from cppo_bench.runner.rejudge import rejudge as rejudge_run

    try:  # an option it does not take is one line, not Python's TypeError
        inspect.signature(rejudge_run).bind(run_dir, **options)
    except TypeError as exc:
        raise DataError(f"rejudge: {exc}") from None
    return rejudge_run(run_dir, **options)
