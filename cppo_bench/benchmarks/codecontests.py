"""CodeContests (`deepmind/code_contests`): the study evaluates its `valid` split.

Each Problem gets the public, private and generated tests (Test.kind says which), the
record's time and memory limits, and only its Python 3 reference solutions.

Two record shapes are read, told apart per record:
- the hub schema: `name, description, public_tests/private_tests/generated_tests
  ({input: [...], output: [...]}), solutions ({language: [...], solution: [...]}),
  time_limit ({seconds, nanos} or None), memory_limit_bytes, cf_contest_id, cf_index, ...`;
- a derived re-packing `{problem, tests}`: the statement with "Time Limit:" / "Memory Limit:"
  lines appended, and the tests as an object or as a string holding a JSON or Python literal
  `{'inputs': [...], 'outputs': [...]}` (read with ast.literal_eval, never eval).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from cppo_bench.benchmarks._io import collect, hub_rows, local_rows, reject_unknown
from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.files import jsonio
from cppo_bench.problem import LoadResult, Problem, SourceIds, Test
from cppo_bench.util.termsafe import quote

HUB_ID = "deepmind/code_contests"
PYTHON3 = 3  # `solutions.language` enum value for Python 3
# enum names of the dataset's `source` and `difficulty` fields
SOURCES = {1: "codechef", 2: "codeforces", 3: "hackerearth", 4: "codejam", 5: "atcoder", 6: "aizu"}
_LEVELS = ["unknown", "easy", "medium", "hard", "harder", "hardest", "external"]
DIFFICULTIES = dict(enumerate(_LEVELS)) | {7 + i: chr(ord("A") + i) for i in range(22)}
TEST_GROUPS = (
    ("public_tests", "public"),
    ("private_tests", "private"),
    ("generated_tests", "generated"),
)
# Linear on any statement (a stranger's text): the blank run before the line is at most 256
# characters ("^\s*" rescans a long run from each of its line starts), and the value is
# greedy, stripped by _limit_value (a lazy value tries "\s*$" at each of its characters)
_LIMIT_LINE = re.compile(r"^\s{0,256}(Time|Memory) Limit:\s*(.+)\s*$", re.MULTILINE | re.IGNORECASE)


# --- hub schema ------------------------------------------------------------------------------


def _tests(group: Any, kind: str) -> list[Test]:
    if group is None:
        return []
    if not isinstance(group, dict):
        raise ValueError(f"{kind} tests are a {type(group).__name__}, expected {{input, output}}")
    inputs, outputs = group.get("input") or [], group.get("output") or []
    if len(inputs) != len(outputs):
        raise ValueError(f"{kind} tests: {len(inputs)} inputs but {len(outputs)} outputs")
    for value in (*inputs, *outputs):
        if not isinstance(value, str):
            raise ValueError(f"{kind} tests hold a {type(value).__name__}, expected text")
    return [Test(i, o, kind=kind) for i, o in zip(inputs, outputs, strict=True)]


def time_limit_seconds(value: Any) -> float | None:
    """{seconds, nanos} (or a number of seconds) -> seconds; None or zero -> None."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, dict):
        seconds = float(value.get("seconds") or 0) + float(value.get("nanos") or 0) / 1e9
    else:
        raise ValueError(f"time_limit is a {type(value).__name__}")
    return seconds or None


def memory_limit_mb(n_bytes: Any) -> int | None:
    # The dataset writes Codeforces' "256 megabytes" as 256000000: decimal megabytes.
    if n_bytes in (None, "", 0):
        return None
    n = int(n_bytes)
    if n < 0:  # max(1, ...) would turn it into a 1 MB limit
        raise ValueError(f"memory_limit_bytes {n} is negative")
    return max(1, round(n / 1_000_000))


def python3_solutions(solutions: Any) -> tuple[str, ...]:
    if not solutions:
        return ()
    langs, codes = solutions.get("language") or [], solutions.get("solution") or []
    if len(langs) != len(codes):
        raise ValueError(f"solutions: {len(langs)} languages but {len(codes)} programs")
    return tuple(code for lang, code in zip(langs, codes, strict=True) if lang == PYTHON3)


def _enum(table: dict[int, str], value: Any) -> str | None:
    """An enum field's name. A parquet / pandas copy may hold the number as a float (7.0) or
    a missing one as NaN: the name of 7, and None, never 'nan'."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):  # NaN, inf: no value
            return None
        if value.is_integer():
            value = int(value)
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return table.get(value, str(value)) if isinstance(value, int) else str(value)


def hub_problem_id(record: dict[str, Any]) -> str | None:
    contest, index = record.get("cf_contest_id"), record.get("cf_index")
    if contest and index:
        return f"{contest}_{index}"
    name = str(record.get("name") or "").strip()
    return name.split(". ", 1)[0] if name else None


def parse_hub_record(record: dict[str, Any], include_generated: bool) -> Problem:
    pid = hub_problem_id(record)
    if not pid:
        raise ValueError("no name / cf_contest_id to identify the problem")
    description = record.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("empty description")
    groups = TEST_GROUPS if include_generated else TEST_GROUPS[:2]
    tests = [t for key, kind in groups for t in _tests(record.get(key), kind)]
    if not tests:
        raise ValueError("no tests")
    contest = record.get("cf_contest_id") or None
    meta = {
        "name": record.get("name"),
        "cf_rating": record.get("cf_rating") or None,
        "cf_tags": list(record.get("cf_tags") or []),
    }
    for key in ("input_file", "output_file"):  # a few problems use files instead of stdio
        if record.get(key):
            meta[key] = record[key]
    return Problem(
        benchmark="codecontests",
        problem_id=pid,
        statement=description,
        tests=tuple(tests),
        time_limit_s=time_limit_seconds(record.get("time_limit")),
        memory_limit_mb=memory_limit_mb(record.get("memory_limit_bytes")),
        reference_solutions=python3_solutions(record.get("solutions")),
        source=SourceIds(
            cf_contest_id=int(contest) if contest else None,
            cf_index=record.get("cf_index") or None,
            platform=_enum(SOURCES, record.get("source")),
        ),
        difficulty=_enum(DIFFICULTIES, record.get("difficulty")),
        checker="codecontests",
        metadata={k: v for k, v in meta.items() if v not in (None, [])},
    )


# --- derived {problem, tests} ------------------------------------------------------------------


def parse_literal_tests(value: Any) -> dict[str, Any]:
    """The derived `tests` field: an object, or a JSON / Python-literal string of one."""
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
                raise ValueError(
                    f"tests is not a JSON or Python literal ({type(exc).__name__})"
                ) from None
    if not isinstance(value, dict):
        raise ValueError(f"tests is a {type(value).__name__}, expected {{inputs, outputs}}")
    return value


def _limit_value(kind: str, text: str) -> float | None:
    text = text.strip()
    if text.startswith("{"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            raise ValueError(f"unreadable {kind} limit {quote(text)}") from None
        return time_limit_seconds(value) if kind == "time" else None
    number = re.match(r"([\d.]+)\s*([a-zA-Z]*)", text)
    if not number:
        raise ValueError(f"unreadable {kind} limit {quote(text)}")
    amount, unit = float(number.group(1)), number.group(2).lower()
    if kind == "time":
        return amount / 1000 if unit.startswith("ms") or unit.startswith("milli") else amount
    if unit.startswith("byte") or unit == "b" or not unit:
        return amount / 1_000_000
    return amount * 1024 if unit.startswith(("g", "gi")) else amount  # megabytes


def split_limits(statement: str) -> tuple[str, float | None, int | None]:
    """Strip the appended limit lines; return (statement, seconds, megabytes)."""
    time_s = memory_mb = None
    for match in _LIMIT_LINE.finditer(statement):
        kind = match.group(1).lower()
        value = _limit_value(kind, match.group(2))
        if kind == "time":
            time_s = value
        elif value:
            memory_mb = max(1, round(value))
    return _LIMIT_LINE.sub("", statement).strip(), time_s, memory_mb


def parse_derived_record(record: dict[str, Any], index: int) -> Problem:
    text = record.get("problem")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty problem statement")
    tests = parse_literal_tests(record.get("tests"))
    inputs, outputs = tests.get("inputs"), tests.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ValueError("tests need equally long 'inputs' and 'outputs' lists")
    if not inputs:
        raise ValueError("no tests")
    if not all(isinstance(v, str) for v in (*inputs, *outputs)):
        raise ValueError("tests hold non-text inputs or outputs")
    statement, time_s, memory_mb = split_limits(text)
    return Problem(
        benchmark="codecontests",
        problem_id=f"row{index}",
        statement=statement,
        tests=tuple(Test(i, o) for i, o in zip(inputs, outputs, strict=True)),
        time_limit_s=time_s,
        memory_limit_mb=memory_mb,
        checker="codecontests",
        metadata={"format": "derived"},
    )


# --- the loader ------------------------------------------------------------------------------


def load_codecontests(
    data: str | Path | None = None,
    *,
    strict: bool = False,
    split: str = "valid",
    include_generated: bool | str = True,
    **options: Any,
) -> LoadResult:
    """CodeContests `split` from the hub or `data`; `include_generated=false` drops the
    generated tests (they can violate the statement's constraints)."""
    reject_unknown("codecontests", options)
    generated = str(include_generated).strip().lower() not in ("false", "0", "no", "off")
    if data is None:
        rows, source = hub_rows(HUB_ID, split), f"{HUB_ID}[{split}]"
    else:
        rows, source = local_rows(data, split), str(data)

    def parse(record: dict[str, Any], ordinal: int) -> Problem:
        if "problem" in record and "tests" in record and "description" not in record:
            return parse_derived_record(record, ordinal)  # no id: its position names it
        return parse_hub_record(record, generated)

    return collect(rows, parse, hub_problem_id, strict=strict, source=source)


SPEC = BenchmarkSpec(
    name="codecontests",
    description="CodeContests valid split: public+private+generated tests, Python 3 "
    "references (options: split, include_generated)",
    load=load_codecontests,
    hub_id=HUB_ID,
    default_split="valid",
)
