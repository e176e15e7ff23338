"""A checked request -> the verifier's own seam types (VerifyJob, Limits). The one door every
request goes through: sizes and limits are capped here, problems are built by `Problem` (its
own checks), and nothing from one request outlives it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.serve.config import ServeConfig
from cppo_bench.util.termsafe import quote
from cppo_bench.verifier import Limits, VerifyJob, validate_problems

if TYPE_CHECKING:
    from cppo_bench.serve.schema import Item, LimitsSpec, VerifyRequest


class RequestError(Exception):
    """A request refused: an HTTP status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = " ".join(message.split())  # one line, whatever the cause held


def request_limits(spec: LimitsSpec | None, config: ServeConfig) -> Limits:
    """The request's limits, each at most the server's cap; the output cap defaults to it."""
    asked = spec.model_dump(exclude_none=True) if spec is not None else {}
    caps = {"time_s": config.max_time_s, "memory_mb": config.max_memory_mb,
            "output_mb": config.max_output_mb}  # fmt: skip
    for name, value in asked.items():
        if value > caps[name]:
            raise RequestError(
                413, f"limits.{name}={value} is over the server's cap of {caps[name]}"
            )
    asked.setdefault("output_mb", config.max_output_mb)
    asked.setdefault("time_s", min(Limits.time_s, config.max_time_s))
    asked.setdefault("memory_mb", min(Limits.memory_mb, config.max_memory_mb))
    try:
        return Limits(**asked)
    except Exception as exc:  # DataError: out of the verifier's own ranges
        raise RequestError(422, str(exc)) from None


def _inline(item: Item, index: int, config: ServeConfig) -> Problem:
    spec = item.problem
    assert spec is not None
    if len(spec.tests) > config.max_tests:
        raise RequestError(413, f"items[{index}]: {len(spec.tests)} tests, over the cap of "
                                f"{config.max_tests}")  # fmt: skip
    # a problem's own limits override the request's (Limits.for_problem): capped the same way
    if spec.time_limit_s is not None and spec.time_limit_s > config.max_time_s:
        raise RequestError(413, f"items[{index}]: time_limit_s over the cap of {config.max_time_s}")
    if spec.memory_limit_mb is not None and spec.memory_limit_mb > config.max_memory_mb:
        raise RequestError(413, f"items[{index}]: memory_limit_mb over the cap of "
                                f"{config.max_memory_mb}")  # fmt: skip
    try:
        tests = tuple(Case(t.input, t.output, t.mode, t.fn_name) for t in spec.tests)
        return Problem("inline", spec.problem_id, "", tests=tests, checker=spec.checker,
                       time_limit_s=spec.time_limit_s, memory_limit_mb=spec.memory_limit_mb)  # fmt: skip
    except Exception as exc:  # the record's own checks (ValueError, DataError)
        raise RequestError(422, f"items[{index}].problem: {exc}") from None


def _named(item: Item, index: int, problems: dict[str, Problem], bench: str | None) -> Problem:
    if item.problem_id is None:
        raise RequestError(422, f"items[{index}]: give 'problem' or 'problem_id'")
    if item.benchmark is not None and item.benchmark != bench:
        served = f"only {bench}" if bench else "no benchmark (start it with --bench)"
        raise RequestError(422, f"items[{index}]: benchmark {quote(item.benchmark)}: this server has "
                                f"{served}")  # fmt: skip
    problem = problems.get(item.problem_id)
    if problem is None:
        raise RequestError(422, f"items[{index}]: unknown problem id {quote(item.problem_id)}")
    return problem


def to_jobs(request: VerifyRequest, config: ServeConfig, problems: dict[str, Problem],
            bench: str | None) -> tuple[list[VerifyJob], Limits]:  # fmt: skip
    if len(request.items) > config.max_programs:
        raise RequestError(413, f"{len(request.items)} programs, over the cap of "
                                f"{config.max_programs} per request")  # fmt: skip
    limits = request_limits(request.limits, config)
    jobs = []
    for i, item in enumerate(request.items):
        if item.problem is not None:
            if item.problem_id is not None or item.benchmark is not None:
                raise RequestError(422, f"items[{i}]: give 'problem' or 'problem_id', not both")
            problem = _inline(item, i, config)
        else:
            problem = _named(item, i, problems, bench)
        jobs.append(VerifyJob(problem, item.code))
    try:  # what verify_batch would refuse (mixed modes, call tests not JSON): a 422 now
        validate_problems(job.problem for job in jobs)
    except Exception as exc:
        raise RequestError(422, str(exc)) from None
    return jobs, limits
