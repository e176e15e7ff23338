"""`cppo-bench verify`'s API: VerifyConfig built once, the same verdicts from a config and from
keywords, and a bad setting one line naming it, before any data loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cppo_bench.api import build_config
from cppo_bench.api.verify import VerifyConfig, rejudge_run, verify_programs
from cppo_bench.errors import DataError

DOUBLE = "n = int(input())\nprint(2 * n)\n"


def _apps(path: Path) -> Path:
    io = {"inputs": ["1\n", "5\n"], "outputs": ["2\n", "10\n"]}
    record = {"problem_id": "p1", "question": "Print twice n.", "solutions": json.dumps([DOUBLE]),
              "input_output": json.dumps(io), "difficulty": "introductory", "url": "",
              "starter_code": ""}  # fmt: skip
    path.write_text(json.dumps(record) + "\n")
    return path


def test_a_config_and_keywords_give_the_same_verdicts(tmp_path: Path) -> None:
    data = _apps(tmp_path / "apps.jsonl")
    programs = tmp_path / "programs.jsonl"
    programs.write_text(
        json.dumps({"problem_id": "p1", "code": DOUBLE}) + "\n"
        + json.dumps({"problem_id": "p1", "code": "print(3)"}) + "\n"
        + "not json\n"
    )  # fmt: skip
    notes: list[str] = []
    config = build_config(VerifyConfig, {"bench": "apps", "data": data, "programs": programs,
                                         "workers": 1})  # fmt: skip
    by_config = verify_programs(config, on_note=notes.append)
    by_keywords = verify_programs(bench="apps", data=str(data), programs=str(programs), workers=1)
    # the oracle: the problem's own tests, 2 * n (the first program), which 3 never is
    assert [r["verdict"] for r in by_config.rows] == ["AC", "WA"]

    def verdicts(rows: list[dict]) -> list[tuple]:  # times and memory differ run to run
        return [(r["problem_id"], r["verdict"], r["tests_passed"], r["tests_total"]) for r in rows]

    assert verdicts(by_keywords.rows) == verdicts(by_config.rows)
    assert by_config.solved() == (1, 1) and by_config.tally()[0] == ("AC", 1, 0.5)
    assert by_config.errors == [f"{programs}:3: not valid JSON (Expecting value)"]
    assert any(line.startswith("error: ") and ":3:" in line for line in notes)


@pytest.mark.parametrize("settings, needle", [
    ({"bench": "demo", "reference": True, "memory_mb": 10**14}, "memory_mb: "),
    ({"bench": "demo", "reference": True, "time_limit": float("nan")}, "time_limit: "),
    ({"bench": "demo"}, "give exactly one of programs"),
    ({"reference": True}, "missing bench"),
    ({"bench": "demo", "reference": True, "workers": 0}, "workers 0"),
    ({"bench": "demo", "reference": True, "runs": "r"}, "runs goes with run"),
    ({"bench": "demo", "reference": True, "workres": 2}, "workres"),
    ({"bench": "demo", "reference": "yes please"}, "reference"),
])  # fmt: skip
def test_a_bad_setting_is_one_line_naming_it(settings: dict, needle: str) -> None:
    with pytest.raises(DataError) as caught:
        verify_programs(**settings)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_the_two_forms_refuse_each_others_settings(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="rejudge_run"):
        verify_programs(run=str(tmp_path))
    with pytest.raises(DataError, match="give run"):
        rejudge_run(bench="demo", reference=True)
    with pytest.raises(DataError, match="not both"):
        verify_programs(VerifyConfig(bench="demo", reference=True), workers=1)
