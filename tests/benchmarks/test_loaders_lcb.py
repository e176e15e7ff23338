"""LiveCodeBench loaders: every real code-generation record maps to a Problem whose tests match
the raw record; the compressed hidden tests of the full record decode to its 4 tests; pickles
naming globals are refused without running anything; version tags and date windows select
the right records; the execution and output-prediction scenarios map synthetic fixtures."""

from __future__ import annotations

import base64
import json
import os
import pickle
import pickletools
import zlib
from pathlib import Path
from typing import Any

import pytest

from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.benchmarks.livecodebench import decode_private_tests, release_increments
from cppo_bench.benchmarks.safe_pickle import UnsafePickleError, safe_loads
from cppo_bench.errors import DataError

PUBLIC = "code_generation_release_v1_public.jsonl"
FULL = "code_generation_full_record_1873_A.json"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def public_rows(shared_data: Path) -> list[dict[str, Any]]:
    return _rows(shared_data / "livecodebench" / PUBLIC)


def _check_tests(problem: Any, cases: list[dict[str, Any]], kind: str, fn_name: str | None) -> None:
    assert len(problem) == len(cases)
    for test, case in zip(problem, cases, strict=True):
        assert test.kind == kind
        if case["testtype"] == "functional":
            assert (test.mode, test.fn_name) == ("call", fn_name)
            args = [json.loads(line) for line in case["input"].splitlines() if line.strip()]
            assert json.loads(test.input) == args
            assert json.loads(test.output) == json.loads(case["output"])
        else:
            assert (test.mode, test.fn_name) == ("stdin", None)
            assert (test.input, test.output) == (case["input"], case["output"])


def test_every_public_record_maps_to_matching_problem(
    shared_data: Path, public_rows: list[dict[str, Any]]
) -> None:
    result = load_benchmark("lcb", str(shared_data / "livecodebench" / PUBLIC))
    assert result.errors == []
    assert [p.problem_id for p in result.problems] == [r["question_id"] for r in public_rows]
    for problem, row in zip(result.problems, public_rows, strict=True):
        fn_name = json.loads(row["metadata"]).get("func_name")
        _check_tests(problem.tests, json.loads(row["public_test_cases"]), "public", fn_name)
        assert problem.fn_name == fn_name
        assert problem.statement == row["question_content"]
        assert problem.starter_code == row["starter_code"]
        assert problem.source.platform == row["platform"]
        assert problem.source.contest_date == row["contest_date"][:10]
        assert problem.source.lcb_question_id == row["question_id"]
        assert problem.checker == "lcb" and problem.difficulty == row["difficulty"]
        if row["platform"] == "leetcode":
            assert problem.modes == {"call"} and problem.starter_code.startswith("class Solution")
        if row["platform"] == "codeforces":
            contest, index = row["question_id"].split("_")
            assert (problem.source.cf_contest_id, problem.source.cf_index) == (int(contest), index)


def _blob_tests_by_opcodes(blob: str) -> list[dict[str, Any]]:
    """Read the pickled JSON string straight off the opcodes (nothing is unpickled)."""
    raw = zlib.decompress(base64.b64decode(blob))
    strings = [arg for op, arg, _ in pickletools.genops(raw) if op.name == "BINUNICODE"]
    assert len(strings) == 1 and isinstance(strings[0], str)
    return json.loads(strings[0])


def test_full_record_hidden_tests_decode(shared_data: Path) -> None:
    path = shared_data / "livecodebench" / FULL
    record = json.loads(path.read_text())
    expected_private = _blob_tests_by_opcodes(record["private_test_cases"])
    assert len(expected_private) == 4
    result = load_benchmark("lcb", str(path))
    assert result.errors == []
    (problem,) = result.problems
    assert problem.problem_id == "1873_A"
    public = json.loads(record["public_test_cases"])
    _check_tests(problem.tests[: len(public)], public, "public", None)
    _check_tests(problem.tests[len(public) :], expected_private, "private", None)
    assert decode_private_tests(record["private_test_cases"]) == expected_private


def test_plain_json_private_tests(shared_data: Path, tmp_path: Path) -> None:
    record = json.loads((shared_data / "livecodebench" / FULL).read_text())
    cases = _blob_tests_by_opcodes(record["private_test_cases"])
    plain = dict(record, private_test_cases=json.dumps(cases))
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    (problem,) = load_benchmark("lcb", str(tmp_path / "plain.json")).problems
    assert [t.kind for t in problem.tests] == ["public"] + ["private"] * 4


# --- the safe unpickler ------------------------------------------------------------------------


class _MakesDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.path),))


def _pack(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data)).decode()


def test_pickle_naming_a_global_is_refused(shared_data: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    os_system = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."  # protocol 0
    record = json.loads((shared_data / "livecodebench" / FULL).read_text())
    evil = [
        dict(record, question_id="evil_0", private_test_cases=_pack(os_system)),
        dict(
            record,
            question_id="evil_4",
            private_test_cases=_pack(pickle.dumps(_MakesDir(marker), 4)),
        ),
        record,
    ]
    path = tmp_path / "evil.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in evil))
    result = load_benchmark("lcb", str(path))
    assert not marker.exists()
    assert [p.problem_id for p in result.problems] == ["1873_A"]
    first, second = result.errors
    assert first.record_id == "evil_0 (line 1)" and "global os.system" in first.reason
    assert second.record_id == "evil_4 (line 2)" and "mkdir" in second.reason
    with pytest.raises(DataError) as info:
        load_benchmark("lcb", str(path), strict=True)
    assert "evil_0" in str(info.value) and "os.system" in str(info.value)
    assert "\n" not in str(info.value)
    assert not marker.exists()


def test_safe_loads_accepts_only_plain_data() -> None:
    plain = {"a": [1, 2.5, "x", b"y", None, True, {"b": []}]}
    assert safe_loads(pickle.dumps(plain, 4)) == plain
    assert safe_loads(pickle.dumps("text")) == "text"
    for value in ((1, 2), {1, 2}, frozenset([1]), bytearray(b"x")):
        with pytest.raises(UnsafePickleError, match="only plain data"):
            safe_loads(pickle.dumps(value, 5))
    with pytest.raises(UnsafePickleError, match="persistent id"):
        safe_loads(b"\x80\x02X\x01\x00\x00\x00xQ.")  # BINPERSID
    with pytest.raises(UnsafePickleError, match="not a valid pickle"):
        safe_loads(pickle.dumps([1, 2, 3])[:-3])
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    loaded = safe_loads(pickle.dumps(cyclic))
    assert loaded[0] is loaded


def test_undecodable_private_tests_are_reported(shared_data: Path, tmp_path: Path) -> None:
    record = json.loads((shared_data / "livecodebench" / FULL).read_text())
    bad = [
        dict(record, question_id="b64", private_test_cases="%%% not base64 %%%"),
        dict(record, question_id="obj", private_test_cases=json.dumps({"input": "1"})),
        dict(record, question_id="tt", private_test_cases=json.dumps([{"input": "1", "output": "1", "testtype": "x"}])),
        dict(record, question_id="fn", metadata="{}", public_test_cases=json.dumps([{"input": "1", "output": "1", "testtype": "functional"}])),
    ]  # fmt: skip
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    result = load_benchmark("lcb", str(tmp_path / "bad.json"))
    assert result.problems == []
    reasons = {e.record_id.split()[0]: e.reason for e in result.errors}
    assert "neither JSON nor base64" in reasons["b64"]
    assert "expected a list" in reasons["obj"]
    assert "unknown testtype" in reasons["tt"]
    assert "no func_name" in reasons["fn"]


# --- versions and date windows ---------------------------------------------------------------


def test_release_increments() -> None:
    assert release_increments("release_v1") == [1]
    assert release_increments("release_v6") == [1, 2, 3, 4, 5, 6]
    assert release_increments("release_latest") == [1, 2, 3, 4, 5, 6]
    assert release_increments("v6") == [6]
    assert release_increments("v1_v3") == [1, 2, 3]
    assert release_increments("v4_v5") == [4, 5]
    for bad in ("release_v7", "v3_v1", "v0", "latest", "6"):
        with pytest.raises(DataError):
            release_increments(bad)


def test_version_and_date_window_on_one_file(
    shared_data: Path, public_rows: list[dict[str, Any]]
) -> None:
    path = str(shared_data / "livecodebench" / PUBLIC)

    def ids(**options: Any) -> list[str]:
        return [p.problem_id for p in load_benchmark("lcb", path, **options).problems]

    everything = [r["question_id"] for r in public_rows]
    assert ids() == ids(release_version="release_v1") == ids(release_version="v1") == everything
    assert ids(release_version="v2") == [] and ids(release_version="v2_v6") == []
    start, end = "2023-09-01", "2023-12-31"
    window = [r["question_id"] for r in public_rows if start <= r["contest_date"][:10] <= end]
    assert 0 < len(window) < len(everything)
    assert ids(start_date=start, end_date=end) == window
    with pytest.raises(DataError, match="start_date"):
        ids(start_date="last week")


def test_release_folder_picks_files_by_version(
    public_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    first = public_rows[:10]
    second = [dict(r, question_id=f"new{i}", contest_date="2024-04-15T00:00:00") for i, r in enumerate(public_rows[10:15])]  # fmt: skip
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    (tmp_path / "test2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in second))

    def count(tag: str) -> int:
        return len(load_benchmark("lcb", str(tmp_path), release_version=tag).problems)

    assert (count("release_v1"), count("v2"), count("release_v2"), count("v1_v2")) == (
        10,
        5,
        15,
        15,
    )
    with pytest.raises(DataError, match="test3.jsonl"):
        count("release_v3")
    with pytest.raises(DataError, match="test6.jsonl"):
        load_benchmark("lcb", str(tmp_path))  # the default release_v6 needs every file


def test_hub_schema_formats_agree(public_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = public_rows[:40]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    expected = [p.to_dict() for p in load_benchmark("lcb", str(tmp_path / "rows.jsonl")).problems]
    assert len(expected) == 40
    for name in ("rows.parquet", "saved"):
        got = load_benchmark("lcb", str(tmp_path / name))
        assert got.errors == [] and [p.to_dict() for p in got.problems] == expected


# --- code execution and test output prediction (synthetic fixtures) ----------------------------

EXECUTION_ROWS: list[dict[str, Any]] = [
    {
        "question_id": 101, "id": "exec_0", "function_name": "doubleEvens",
        "code": "def doubleEvens(xs):\n    return [x * 2 for x in xs if x % 2 == 0]\n",
        "input": "doubleEvens(xs = [1, 2, 3, 4])", "output": "[4, 8]", "numsteps": 12,
        "problem_id": [101, 0], "contest_id": "weekly-contest-1",
        "contest_date": "2023-06-04T00:00:00", "difficulty": "easy",
    },
    {
        "question_id": 102, "id": "exec_1", "function_name": "shout",
        "code": "def shout(s):\n    return s.upper() + '!'\n",
        "input": "shout(s = 'hey')", "output": "'HEY!'", "numsteps": 3,
        "problem_id": [102, 0], "contest_id": "weekly-contest-9",
        "contest_date": "2024-02-11T00:00:00", "difficulty": "medium",
    },
]  # fmt: skip

PREDICTION_ROWS: list[dict[str, Any]] = [
    {
        "question_title": "count-vowels", "question_content": "Count the vowels of word.",
        "question_id": "9001", "contest_id": "weekly-contest-5",
        "contest_date": "2023-07-02T00:00:00", "difficulty": "easy",
        "starter_code": "class Solution:\n    def countVowels(self, word: str) -> int:\n        ",
        "function_name": "countVowels", "test_id": 0,
        "test": json.dumps([{"input": '"banana"', "output": "3", "testtype": "functional"}]),
    },
    {
        "question_title": "pair-sum", "question_content": "Return a + b.",
        "question_id": "9002", "contest_id": "weekly-contest-6",
        "contest_date": "2024-01-07T00:00:00", "difficulty": "easy",
        "starter_code": "class Solution:\n    def pairSum(self, a: int, b: int) -> int:\n        ",
        "function_name": "pairSum", "test_id": 2,
        "test": json.dumps([{"input": "4\n-9", "output": "-5", "testtype": "functional"}]),
    },
]  # fmt: skip


def test_execution_scenario(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    broken = dict(EXECUTION_ROWS[0], id="exec_bad", code="")
    pq.write_table(pa.Table.from_pylist([*EXECUTION_ROWS, broken]), tmp_path / "exec.parquet")
    result = load_benchmark("lcb_execution", str(tmp_path / "exec.parquet"))
    assert [p.problem_id for p in result.problems] == ["exec_0", "exec_1"]
    for problem, row in zip(result.problems, EXECUTION_ROWS, strict=True):
        assert (problem.task, problem.label, problem.statement) == (
            "execution",
            row["output"],
            row["code"],
        )
        assert problem.metadata["input"] == row["input"] and problem.tests == ()
        assert problem.source.lcb_question_id == str(row["question_id"])
        assert problem.source.contest_date == row["contest_date"][:10]
    ((error),) = result.errors
    assert error.record_id == "exec_bad (row 2)" and error.reason == "empty code"
    late = load_benchmark("lcb_execution", str(tmp_path / "exec.parquet"), start_date="2024-01-01")
    assert [p.problem_id for p in late.problems] == ["exec_1"]


def test_output_prediction_scenario(tmp_path: Path) -> None:
    path = tmp_path / "top.jsonl"
    broken = dict(PREDICTION_ROWS[0], test_id=5, test="[]")
    path.write_text("".join(json.dumps(r) + "\n" for r in [*PREDICTION_ROWS, broken]))
    result = load_benchmark("lcb_output_prediction", str(path))
    assert [p.problem_id for p in result.problems] == ["9001_0", "9002_2"]
    for problem, row in zip(result.problems, PREDICTION_ROWS, strict=True):
        (case,) = json.loads(row["test"])
        (test,) = problem.tests
        assert (problem.task, problem.label) == ("output_prediction", case["output"])
        assert (test.mode, test.fn_name) == ("call", row["function_name"])
        assert json.loads(test.input) == [json.loads(x) for x in case["input"].split("\n")]
        assert problem.starter_code == row["starter_code"]
    assert [e.record_id for e in result.errors] == ["9001_5 (line 3)"]
    early = load_benchmark("lcb_output_prediction", str(path), end_date="2023-12-31")
    assert [p.problem_id for p in early.problems] == ["9001_0"]


@pytest.mark.parametrize(
    ("bench", "hub_id"),
    [
        ("lcb", "livecodebench/code_generation_lite"),
        ("lcb_execution", "livecodebench/execution-v2"),
        ("lcb_output_prediction", "livecodebench/test_generation"),
    ],
)
def test_registered_and_offline(bench: str, hub_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert BENCHMARKS.get(bench).hub_id == hub_id
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError) as info:
        load_benchmark(bench)
    assert hub_id in str(info.value) and "pass --data PATH" in str(info.value)
