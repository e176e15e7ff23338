"""`verify --bench apps --data FILE --programs P`: string problem ids are accepted, and the
problems the programs name are the ones verified (not the loader's default slice)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main

DOUBLE = "n = int(input())\nprint(2 * n)\n"


def _apps_record(pid, difficulty: str) -> dict:
    io = {"inputs": ["1\n", "5\n", "-2\n"], "outputs": ["2\n", "10\n", "-4\n"]}
    return {
        "problem_id": pid,
        "question": "Read n and print twice n.",
        "solutions": json.dumps([DOUBLE]),
        "input_output": json.dumps(io),
        "difficulty": difficulty,
        "url": "",
        "starter_code": "",
    }


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_string_ids_load(tmp_path):
    data = tmp_path / "apps.jsonl"
    _write(data, [_apps_record("abc-1", "introductory"), _apps_record(3, "introductory")])
    result = load_benchmark("apps", str(data))
    assert result.errors == []
    assert [p.problem_id for p in result.problems] == ["3", "abc-1"]


def test_verify_checks_the_problems_the_programs_name(tmp_path):
    data = tmp_path / "apps.jsonl"
    # 201 introductory rows: the default 200-problem slice leaves one out; the interview
    # row is outside the default difficulty; "abc-1" has a string id
    rows = [_apps_record(i, "introductory") for i in range(201)]
    rows += [_apps_record(900, "interview"), _apps_record("abc-1", "introductory")]
    _write(data, rows)
    default = {p.problem_id for p in load_benchmark("apps", str(data)).problems}
    left_out = next(str(i) for i in range(201) if str(i) not in default)
    programs = tmp_path / "programs.jsonl"
    named = [left_out, "900", "abc-1"]
    _write(programs, [{"problem_id": pid, "code": DOUBLE} for pid in named])
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(main, ["verify", "--bench", "apps", "--data", str(data),
                                       "--programs", str(programs), "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    verdicts = {
        r["problem_id"]: r["verdict"] for r in map(json.loads, out.read_text().splitlines())
    }
    assert verdicts == dict.fromkeys(named, "AC")
