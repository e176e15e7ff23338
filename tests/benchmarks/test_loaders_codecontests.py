"""CodeContests loader: every record of the real derived test split maps to a Problem with the
record's tests and limits; the tests literal is parsed, never evaluated; the hub schema (built
here from the real rows) gives public/private/generated tests, Python 3 references and limits,
from parquet, save_to_disk and sharded folders; malformed records are reported by id."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.errors import DataError


@pytest.fixture(scope="module")
def derived(shared_data: Path) -> list[dict[str, Any]]:
    return json.loads((shared_data / "codecontests" / "test_split_derived.json").read_text())


def _raw_tests(record: dict[str, Any]) -> dict[str, list[str]]:
    tests = record["tests"]
    return ast.literal_eval(tests) if isinstance(tests, str) else tests


def _raw_limits(statement: str) -> tuple[float, int]:
    """Limits read off the statement's last lines, independently of the loader."""
    lines = [line for line in statement.splitlines() if line.strip()]
    time_line = next(x for x in lines if x.startswith("Time Limit:"))
    memory_line = next(x for x in lines if x.startswith("Memory Limit:"))
    t = ast.literal_eval(time_line.split(":", 1)[1].strip())
    n_bytes = int(memory_line.split(":", 1)[1].split()[0])
    return t["seconds"] + t["nanos"] / 10**9, n_bytes // 10**6


def test_every_derived_record_maps_to_matching_problem(
    shared_data: Path, derived: list[dict[str, Any]]
) -> None:
    result = load_benchmark(
        "codecontests", str(shared_data / "codecontests" / "test_split_derived.json")
    )
    assert result.errors == []
    assert len(result.problems) == len(derived) == 110
    assert len({p.problem_id for p in result.problems}) == 110
    for record, problem in zip(derived, result.problems, strict=True):
        raw = _raw_tests(record)
        assert [(t.input, t.output) for t in problem.tests] == list(
            zip(raw["inputs"], raw["outputs"], strict=True)
        )
        assert {t.mode for t in problem.tests} == {"stdin"}
        assert (problem.time_limit_s, problem.memory_limit_mb) == _raw_limits(record["problem"])
        assert "Time Limit:" not in problem.statement and "Memory Limit:" not in problem.statement
        assert problem.statement.strip() in record["problem"]
        assert problem.checker == "codecontests" and problem.reference_solutions == ()


def test_tests_literal_string_forms(derived: list[dict[str, Any]], tmp_path: Path) -> None:
    rows = derived[:6]
    as_json = [dict(r, tests=json.dumps(r["tests"])) for r in rows]
    as_literal = [dict(r, tests=repr(r["tests"])) for r in rows]  # Python literal, single quotes
    assert as_literal[0]["tests"].startswith("{'inputs'")
    results = []
    for name, data in (("obj", rows), ("json", as_json), ("literal", as_literal)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        results.append(load_benchmark("codecontests", str(tmp_path / f"{name}.json")))
    assert all(r.errors == [] for r in results)
    dicts = [[p.to_dict() for p in r.problems] for r in results]
    assert dicts[0] == dicts[1] == dicts[2] and len(dicts[0]) == 6


def test_tests_literal_is_never_evaluated(derived: list[dict[str, Any]], tmp_path: Path) -> None:
    marker = tmp_path / "evaluated"
    code = f"__import__('pathlib').Path({str(marker)!r}).touch() or {{'inputs': [], 'outputs': []}}"
    rows = [dict(derived[0], tests=code), derived[1]]
    (tmp_path / "evil.json").write_text(json.dumps(rows))
    result = load_benchmark("codecontests", str(tmp_path / "evil.json"))
    assert not marker.exists()
    assert len(result.problems) == 1
    (error,) = result.errors
    assert error.record_id == "item 0" and "not a JSON or Python literal" in error.reason


# --- the hub schema, built from the real rows ---------------------------------------------------


def _hub_record(i: int, record: dict[str, Any]) -> dict[str, Any]:
    raw = _raw_tests(record)
    ins, outs = raw["inputs"], raw["outputs"]
    seconds, megabytes = _raw_limits(record["problem"])
    statement = re.split(r"\n(?:Time|Memory) Limit:", record["problem"])[0]
    return {
        "name": f"{1500 + i}_B. Problem {i}",
        "description": statement,
        "public_tests": {"input": ins[:1], "output": outs[:1]},
        "private_tests": {"input": ins[1:3], "output": outs[1:3]},
        "generated_tests": {"input": ins[3:], "output": outs[3:]},
        "source": 2,
        "difficulty": 8,
        "solutions": {
            "language": [2, 3, 1, 3],
            "solution": ["int main(){}", "print(1)", "print 2", "print(3)"],
        },
        "incorrect_solutions": {"language": [3], "solution": ["print(0)"]},
        "cf_contest_id": 1500 + i,
        "cf_index": "B",
        "cf_points": 0.0,
        "cf_rating": 1200 + i,
        "cf_tags": ["math"],
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": {"seconds": int(seconds), "nanos": int(round(seconds % 1 * 10**9))},
        "memory_limit_bytes": megabytes * 10**6,
        "input_file": "",
        "output_file": "",
    }


@pytest.fixture(scope="module")
def hub_rows(derived: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # rows with 1, 2, 4, 9 ... tests so that private and generated groups vary
    picked = [r for r in derived if len(_raw_tests(r)["inputs"]) in (1, 2, 4, 9)][:8]
    rows = [_hub_record(i, r) for i, r in enumerate(picked)]
    rows[0]["time_limit"] = None
    return rows


def _check_hub(result: Any, rows: list[dict[str, Any]], generated: bool = True) -> None:
    assert result.errors == []
    assert [p.problem_id for p in result.problems] == [
        f"{r['cf_contest_id']}_{r['cf_index']}" for r in rows
    ]
    for problem, row in zip(result.problems, rows, strict=True):
        groups = [("public", "public_tests"), ("private", "private_tests")]
        groups += [("generated", "generated_tests")] if generated else []
        expected = [
            (kind, i, o)
            for kind, key in groups
            for i, o in zip(row[key]["input"], row[key]["output"], strict=True)
        ]
        assert [(t.kind, t.input, t.output) for t in problem.tests] == expected
        assert problem.reference_solutions == ("print(1)", "print(3)")  # Python 3 only
        tl = row["time_limit"]
        assert problem.time_limit_s == (tl["seconds"] + tl["nanos"] / 1e9 if tl else None)
        assert problem.memory_limit_mb == row["memory_limit_bytes"] // 10**6
        assert (problem.source.cf_contest_id, problem.source.cf_index) == (
            row["cf_contest_id"],
            "B",
        )
        assert problem.source.platform == "codeforces" and problem.difficulty == "B"
        assert problem.statement == row["description"]


def test_hub_schema_from_parquet_save_to_disk_and_shards(
    hub_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(hub_rows), tmp_path / "valid.parquet")
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(hub_rows[:1]),
            "valid": datasets.Dataset.from_list(hub_rows),
        }
    ).save_to_disk(str(tmp_path / "saved"))
    shards = tmp_path / "snapshot" / "data"
    shards.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(hub_rows[:3]), shards / "valid-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(hub_rows[3:]), shards / "valid-00001-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(hub_rows[:2]), shards / "test-00000-of-00001.parquet")
    for name in ("valid.parquet", "saved", "snapshot"):
        _check_hub(load_benchmark("codecontests", str(tmp_path / name)), hub_rows)
    test_split = load_benchmark("codecontests", str(tmp_path / "snapshot"), split="test")
    assert len(test_split.problems) == 2


def test_generated_tests_can_be_left_out(hub_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in hub_rows))
    _check_hub(
        load_benchmark("codecontests", str(path), include_generated="false"), hub_rows, False
    )


def test_malformed_hub_records(hub_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    uneven = dict(hub_rows[1], private_tests={"input": ["1\n", "2\n"], "output": ["1\n"]})
    empty = dict(hub_rows[2], public_tests=None, private_tests=None, generated_tests=None)
    no_text = dict(hub_rows[3], description="")
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (hub_rows[0], uneven, empty, no_text)))
    result = load_benchmark("codecontests", str(path))
    assert [p.problem_id for p in result.problems] == ["1500_B"]
    reasons = {e.record_id: e.reason for e in result.errors}
    assert reasons == {
        "1501_B (line 2)": "private tests: 2 inputs but 1 outputs",
        "1502_B (line 3)": "no tests",
        "1503_B (line 4)": "empty description",
    }
    with pytest.raises(DataError, match=r"bad\.jsonl: record 1501_B \(line 2\): private tests"):
        load_benchmark("codecontests", str(path), strict=True)


def test_registered_and_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = BENCHMARKS.get("codecontests")
    assert (spec.hub_id, spec.default_split) == ("deepmind/code_contests", "valid")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=r"deepmind/code_contests .*pass --data PATH"):
        load_benchmark("codecontests")
