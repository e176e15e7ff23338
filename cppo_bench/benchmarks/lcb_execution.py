"""LiveCodeBench code execution (`livecodebench/execution-v2`, split `test`): predict what a
given function returns on a given call; scored by majority vote over K answers (maj@K).

Hub schema, one row per (program, call): `id, question_id, function_name, code, input`
(the call expression, e.g. `f(nums = [1, 2])`), `output` (the returned value as a Python
literal), `numsteps, problem_id, contest_id, contest_date, difficulty`.

Mapping: statement = the program; metadata["input"] = the call to complete; label = the
expected literal. There are no Tests: the answer is checked against `label`.
"""

from __future__ import annotations

from typing import Any

from cppo_bench.benchmarks._io import (
    dated_scenario_spec,
    in_window,
    iso_date,
)
from cppo_bench.problem import Problem, SourceIds

HUB_ID = "livecodebench/execution-v2"


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"empty {key}")
    return value


def record_id(record: dict[str, Any]) -> str | None:
    value = record.get("id") or record.get("question_id")
    return str(value) if value not in (None, "") else None


def parse_record(record: dict[str, Any], start: str | None, end: str | None) -> Problem | None:
    pid = record_id(record)
    if pid is None:
        raise ValueError("no id")
    contest_date = iso_date(record.get("contest_date"))
    if not in_window(contest_date, start, end):
        return None
    code, call, output = _text(record, "code"), _text(record, "input"), _text(record, "output")
    meta = {
        "input": call,
        "function_name": record.get("function_name"),
        "numsteps": record.get("numsteps"),
        "contest_id": record.get("contest_id"),
        "lcb_problem_ids": list(record.get("problem_id") or []),
    }
    qid = record.get("question_id")
    return Problem(
        benchmark="lcb_execution",
        problem_id=pid,
        statement=code,
        tests=(),
        source=SourceIds(
            lcb_question_id=str(qid) if qid not in (None, "") else None,
            contest_date=contest_date,
        ),
        difficulty=record.get("difficulty") or None,
        checker="exact",
        task="execution",
        label=output.strip(),
        metadata={k: v for k, v in meta.items() if v not in (None, "", [])},
    )


SPEC = dated_scenario_spec(
    "lcb_execution",
    "LiveCodeBench code execution: predict a function's return value, maj@K "
    "(options: start_date, end_date)",
    HUB_ID,
    parse_record,
    record_id,
)
load_lcb_execution = SPEC.load  # (the loader's public name)
