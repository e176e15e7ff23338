"""The verifier's seam types: VerifyJob in, VerifyResult out, and the resource Limits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from cppo_bench.problem import Problem
from cppo_bench.util.checks import Check, integer, number

# Every verdict but AC scores 0.
VERDICTS = ("AC", "WA", "TLE", "MLE", "RE", "CE", "EMPTY")


# the verifier's limits (Limits checks itself with these): the caps of a
# benchmark record's own limits (cppo_bench.problem) and what the sandbox's rlimits can apply
LIMIT_RANGES: dict[str, Check] = {
    "time_s": number(1e-3, 60.0), "memory_mb": integer(16, 16_384), "output_mb": integer(1, 4096),
    "nproc": integer(1, 4096), "file_mb": integer(1, 16_384),
    "wall_factor": number(1.0, 100.0), "wall_slack_s": number(0.0, 600.0),
}  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """Per-test resource limits (the study's sandbox table).

    time_s is a CPU-time limit, so verdicts do not depend on how busy the machine is; a
    wall-clock backstop of `wall_factor * time_s + wall_slack_s` catches sleeping and
    blocked programs. memory_mb caps the test process's address space (RLIMIT_AS; the
    interpreter itself takes ~17 MiB of it, numpy ~100 MiB once imported).
    """

    time_s: float = 10.0
    memory_mb: int = 256
    output_mb: int = 64  # stdout (or a call's returned value) past this: stopped, WA
    nproc: int = 64  # processes + threads per sandbox (RLIMIT_NPROC in its own user ns)
    file_mb: int = 64  # RLIMIT_FSIZE, and the size of the scratch tmpfs
    wall_factor: float = 2.0
    wall_slack_s: float = 1.0

    def __post_init__(self) -> None:
        # the one door for limits (CLI flags, the API's **limits, a problem's own): each in
        # the range LIMIT_RANGES gives, so `time_s=nan` or 1e300 is refused, never a
        # correct program judged TLE / RE under a limit no kernel can apply
        from cppo_bench.errors import DataError

        for name, check in LIMIT_RANGES.items():
            why = check(getattr(self, name))
            if why:
                raise DataError(f"limit {name}: {why}")

    def for_problem(self, problem: Problem) -> Limits:
        """The record's own limits override the defaults."""
        changes: dict[str, Any] = {}
        if problem.time_limit_s:
            changes["time_s"] = float(problem.time_limit_s)
        if problem.memory_limit_mb:
            changes["memory_mb"] = int(problem.memory_limit_mb)
        return replace(self, **changes) if changes else self

    @property
    def wall_s(self) -> float:
        return self.wall_factor * self.time_s + self.wall_slack_s

    def key(self) -> list:
        return [getattr(self, f.name) for f in fields(self)]


@dataclass(frozen=True)
class VerifyJob:
    """One program to verify against one problem's tests. `code` may be a whole model
    completion: the verifier extracts the program (see extract_code)."""

    problem: Problem
    code: str


@dataclass(frozen=True)
class VerifyResult:
    verdict: str  # AC WA TLE MLE RE CE EMPTY
    passed: bool
    tests_passed: int
    tests_total: int
    first_failed: int | None  # index into problem.tests of the first failing test
    time_s: float  # wall seconds the program ran, summed over the tests run
    peak_memory_mb: float | None  # max RSS over the tests run
    detail: str  # one line: why it failed (empty for AC)
    code: str | None  # the extracted program (None when there was none)
    cpu_s: float = 0.0  # CPU seconds, summed over the tests run
    sandbox: str = ""  # the isolation it ran under (bwrap, unshare, rlimits)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VerifyResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def empty_result(problem: Problem) -> VerifyResult:
    return VerifyResult(
        verdict="EMPTY",
        passed=False,
        tests_passed=0,
        tests_total=len(problem.tests),
        first_failed=0 if problem.tests else None,
        time_s=0.0,
        peak_memory_mb=None,
        detail="no code found in the completion",
        code=None,
    )
