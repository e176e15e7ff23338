"""LiveCodeBench test output prediction (`livecodebench/test_generation`, split `test`): given
a problem statement, its function signature and a test input, predict the expected output;
scored by majority vote over K answers (maj@K).

Hub schema, one row per (question, test): `question_title, question_content, question_id,
contest_id, contest_date, difficulty, starter_code, function_name, test_id`, and `test`, a
JSON string of a list holding the test `{input, output, testtype}` (functional: one JSON
argument per input line).

Mapping: problem_id = `<question_id>_<test_id>`; the test becomes a public call-mode Test
(input: JSON list of the arguments); label = its expected output.
"""

from __future__ import annotations

from typing import Any

from cppo_bench.benchmarks._io import (
    dated_scenario_spec,
    in_window,
    iso_date,
    json_field,
)
from cppo_bench.benchmarks.livecodebench import make_test
from cppo_bench.problem import Problem, SourceIds

HUB_ID = "livecodebench/test_generation"


def record_id(record: dict[str, Any]) -> str | None:
    qid, test_id = record.get("question_id"), record.get("test_id")
    if qid in (None, ""):
        return None
    return f"{qid}_{test_id}" if test_id not in (None, "") else str(qid)


def parse_record(record: dict[str, Any], start: str | None, end: str | None) -> Problem | None:
    pid = record_id(record)
    if pid is None:
        raise ValueError("no question_id")
    contest_date = iso_date(record.get("contest_date"))
    if not in_window(contest_date, start, end):
        return None
    content = record.get("question_content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("empty question_content")
    fn_name = record.get("function_name") or None
    cases = json_field(record, "test", default=[])
    if not isinstance(cases, list) or not cases:
        raise ValueError("no test to predict the output of")
    tests = tuple(make_test(case, "public", fn_name) for case in cases)
    return Problem(
        benchmark="lcb_output_prediction",
        problem_id=pid,
        statement=content,
        tests=tests,
        starter_code=record.get("starter_code") or "",
        source=SourceIds(
            lcb_question_id=str(record["question_id"]),
            contest_date=contest_date,
            platform="leetcode" if fn_name else None,
        ),
        difficulty=record.get("difficulty") or None,
        checker="exact",
        task="output_prediction",
        label=tests[0].output.strip(),
        metadata={
            k: v
            for k, v in {
                "title": record.get("question_title"),
                "contest_id": record.get("contest_id"),
                "test_id": record.get("test_id"),
            }.items()
            if v not in (None, "")
        },
    )


SPEC = dated_scenario_spec(
    "lcb_output_prediction",
    "LiveCodeBench test output prediction: predict a test's expected output, "
    "maj@K (options: start_date, end_date)",
    HUB_ID,
    parse_record,
    record_id,
)
load_lcb_output_prediction = SPEC.load  # (the loader's public name)
