"""The record every benchmark maps to: `Problem`, with its `Test`s.

Loaders produce Problems, methods read them, the verifier runs their tests; nothing
downstream looks at a benchmark's raw schema.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from cppo_bench.errors import DataError  # noqa: F401  (public here too)
from cppo_bench.util.termsafe import quote

TestMode = Literal["stdin", "call"]
# Which output-comparison rule the verifier applies (see cppo_bench.verifier.compare).
Checker = Literal["apps", "codecontests", "lcb", "exact"]
# codegen: write a program; execution / output_prediction: predict a value, scored by maj@K.
Task = Literal["codegen", "execution", "output_prediction"]


MAX_TESTS = 10_000  # per problem (benchmarks ship at most a few hundred)
MAX_TEST_CHARS = 512 << 20  # all of a problem's test inputs and outputs together
MAX_TIME_LIMIT_S = 60.0  # per test (the benchmarks' own limits are at most ~15 s)
MAX_MEMORY_LIMIT_MB = 16_384


def check_limits(time_s: float | None, memory_mb: int | None) -> None:
    """ValueError unless each limit is absent or a finite, positive value within its cap."""
    if time_s is not None:
        if isinstance(time_s, bool) or not isinstance(time_s, (int, float)):
            raise ValueError(f"time limit {quote(time_s)} is not a number")
        if not (math.isfinite(time_s) and 0 < time_s <= MAX_TIME_LIMIT_S):
            raise ValueError(f"time limit {quote(time_s)} s is outside (0, {MAX_TIME_LIMIT_S:g}]")
    if memory_mb is not None:
        if isinstance(memory_mb, bool) or not isinstance(memory_mb, int):
            raise ValueError(f"memory limit {quote(memory_mb)} is not an integer")
        if not 0 < memory_mb <= MAX_MEMORY_LIMIT_MB:
            raise ValueError(f"memory limit {memory_mb} MB is outside (0, {MAX_MEMORY_LIMIT_MB}]")


@dataclass(frozen=True)
class Test:
    """One hidden or public test.

    stdin mode: `input` is fed on standard input, `output` is the expected standard output.
    call mode: `input` is a JSON list of positional arguments and `output` the JSON-encoded
    expected return value; `fn_name` names the function (or `Solution` method) to call.
    """

    input: str
    output: str
    mode: TestMode = "stdin"
    fn_name: str | None = None
    kind: str = "hidden"  # public | private | generated | hidden

    def __post_init__(self) -> None:
        if not isinstance(self.input, str) or not isinstance(self.output, str):
            raise ValueError("a test's input and output must be text")
        if self.mode not in ("stdin", "call"):
            raise ValueError(f"test mode must be 'stdin' or 'call', got {quote(self.mode)}")
        if self.mode == "call" and not self.fn_name:
            raise ValueError("a call-mode test needs fn_name")


@dataclass(frozen=True)
class SourceIds:
    """Identifiers of a problem at its origin; decontamination matches on them."""

    apps_id: int | None = None
    cf_contest_id: int | None = None
    cf_index: str | None = None
    lcb_question_id: str | None = None
    platform: str | None = None
    contest_date: str | None = None  # ISO date
    url: str | None = None


@dataclass(frozen=True)
class Problem:
    benchmark: str
    problem_id: str
    statement: str
    tests: tuple[Test, ...]
    starter_code: str = ""
    time_limit_s: float | None = None  # the record's own limit; None -> verifier default
    memory_limit_mb: int | None = None
    reference_solutions: tuple[str, ...] = ()
    source: SourceIds = field(default_factory=SourceIds)
    difficulty: str | None = None
    checker: Checker = "exact"
    task: Task = "codegen"
    label: str | None = None  # expected answer for execution / output_prediction tasks
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        # limits and sizes come from the data: a NaN limit would fail a correct program, 1e9
        # would hang the verifier, a million tests (or one memo'd string repeated) exhaust it
        check_limits(self.time_limit_s, self.memory_limit_mb)
        if len(self.tests) > MAX_TESTS:
            raise ValueError(f"{len(self.tests)} tests, more than the cap of {MAX_TESTS}")
        size = sum(len(t.input) + len(t.output) for t in self.tests)
        if size > MAX_TEST_CHARS:
            raise ValueError(
                f"tests hold {size >> 20} MiB of text, over the {MAX_TEST_CHARS >> 20} MiB cap"
            )

    @property
    def uid(self) -> str:
        """Globally unique id: benchmark/problem_id."""
        return f"{self.benchmark}/{self.problem_id}"

    @property
    def modes(self) -> set[str]:
        return {t.mode for t in self.tests}

    @property
    def fn_name(self) -> str | None:
        return next((t.fn_name for t in self.tests if t.fn_name), None)

    def tests_hash(self) -> str:
        """SHA-256 over the tests and limits: a verdict cache key component."""
        payload = json.dumps(
            [[t.input, t.output, t.mode, t.fn_name] for t in self.tests]
            + [self.time_limit_s, self.memory_limit_mb, self.checker],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tests"] = [asdict(t) for t in self.tests]
        d["reference_solutions"] = list(self.reference_solutions)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Problem:
        d = dict(d)
        d["tests"] = tuple(Test(**t) for t in d.get("tests", ()))
        d["reference_solutions"] = tuple(d.get("reference_solutions", ()))
        d["source"] = SourceIds(**(d.get("source") or {}))
        return cls(**d)


@dataclass(frozen=True)
class RecordError:
    """A malformed source record that a loader skipped (non-strict mode)."""

    source: str  # file or dataset name
    record_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: record {self.record_id}: {self.reason}"


@dataclass
class LoadResult:
    """What a loader returns: the problems it mapped and the records it had to skip."""

    problems: list[Problem]
    errors: list[RecordError] = field(default_factory=list)
    source: str = ""  # where the data came from (path or hub dataset name/split)
    # what the loader left out on purpose (other difficulties, a seeded subset), so a
    # summary showing fewer problems than the source holds says why
    notes: list[str] = field(default_factory=list)
    # records read but left out on purpose, by reason (a loader option's filter): with
    # `problems` and `errors` it accounts for every record read (cppo_bench.benchmarks.loadreport)
    dropped: dict[str, int] = field(default_factory=dict)


# --- JSONL files of Problem dicts (the demo benchmark, `data show --json`, decontam) ---------


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
    from cppo_bench.files import jsonio, userfiles

    path = Path(path)
    # streamed, split on \n only (U+2028 in a statement is no line end); a FIFO, device or
    # over-long line is one error naming the file
    lines = userfiles.lines(path)
    problems: list[Problem] = []
    errors: list[RecordError] = []
    seen: set[str] = set()
    for lineno, line in ((ln.lineno, ln) for ln in lines):
        if line.text is not None and not line.text.strip():
            continue
        record: Any = None
        try:
            if line.text is None:
                raise ValueError(line.error)
            record = jsonio.loads(line.text)
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
