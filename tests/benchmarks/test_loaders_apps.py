"""APPS loader: every real sample record (hub-schema JSONL and the release folder layout) maps
to a Problem whose tests match the raw record, the seeded slice is deterministic, malformed
records are reported by id, the hub-schema file formats agree, and offline fails in one line."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.benchmarks.apps import choose_subset
from cppo_bench.errors import DataError
from cppo_bench.problem import Problem

JSONL_FILES = ("introductory.jsonl", "interview.jsonl")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _folder_record(d: Path) -> dict[str, Any]:
    """The raw files of one release folder, read here independently of the loader."""
    meta = json.loads((d / "metadata.json").read_text())
    starter = d / "starter_code.py"
    return {
        "problem_id": int(d.name),
        "question": (d / "question.txt").read_text(),
        "io": json.loads((d / "input_output.json").read_text()),
        "solutions": json.loads((d / "solutions.json").read_text()),
        "starter_code": starter.read_text() if starter.is_file() else "",
        **meta,
    }


def _check_against_raw(
    problem: Problem, pid: int, io: dict[str, Any], solutions: list[str]
) -> None:
    assert problem.problem_id == str(pid)
    assert problem.source.apps_id == pid
    assert problem.checker == "apps"
    assert len(problem.tests) == len(io["inputs"]) == len(io["outputs"])
    fn_name = io.get("fn_name")
    for test, raw_in, raw_out in zip(problem.tests, io["inputs"], io["outputs"], strict=True):
        if fn_name:
            assert (test.mode, test.fn_name) == ("call", fn_name)
            assert json.loads(test.input) == raw_in  # the argument list
            assert json.loads(test.output) == raw_out  # kept exactly, wrapping included
        else:
            assert (test.mode, test.fn_name) == ("stdin", None)
            assert (test.input, test.output) == (raw_in, raw_out)
    assert list(problem.reference_solutions) == solutions


@pytest.mark.parametrize("name", JSONL_FILES)
def test_every_jsonl_record_maps_to_matching_problem(shared_data: Path, name: str) -> None:
    path = shared_data / "apps" / name
    raw = _rows(path)
    result = load_benchmark("apps", str(path), difficulty="all", subset=0)
    assert result.errors == []
    by_id = {p.problem_id: p for p in result.problems}
    assert sorted(by_id) == sorted(str(r["problem_id"]) for r in raw)
    for r in raw:
        p = by_id[str(r["problem_id"])]
        _check_against_raw(
            p, r["problem_id"], json.loads(r["input_output"]), json.loads(r["solutions"])
        )
        assert p.statement == r["question"] and p.starter_code == r["starter_code"]
        assert p.difficulty == r["difficulty"] and p.source.url == r["url"]
        if "codeforces.com/problemset/problem/" in r["url"]:
            contest, index = r["url"].rstrip("/").split("/")[-2:]
            assert (p.source.cf_contest_id, p.source.cf_index) == (int(contest), index)
            assert p.source.platform == "codeforces"
    n_call = sum("fn_name" in json.loads(r["input_output"]) for r in raw)
    assert sum(p.modes == {"call"} for p in result.problems) == n_call
    if name == "introductory.jsonl":
        assert n_call == 12  # the README's 12 LeetCode rows


def test_every_release_folder_maps_to_matching_problem(shared_data: Path) -> None:
    root = shared_data / "apps" / "folder_layout"
    result = load_benchmark("apps", str(root), difficulty="all")
    assert result.errors == []
    by_id = {p.problem_id: p for p in result.problems}
    dirs = sorted(d for d in root.iterdir() if d.is_dir())
    assert sorted(by_id, key=int) == [str(int(d.name)) for d in dirs]
    for d in dirs:
        raw = _folder_record(d)
        p = by_id[str(raw["problem_id"])]
        _check_against_raw(p, raw["problem_id"], raw["io"], raw["solutions"])
        assert p.starter_code == raw["starter_code"] and p.difficulty == raw["difficulty"]
    leetcode, codewars = by_id["2404"], by_id["4184"]
    assert leetcode.starter_code.lstrip().startswith("class Solution")
    assert leetcode.fn_name == "findKthPositive"
    assert codewars.fn_name == "is_prime"
    assert all(isinstance(json.loads(t.output), list) for t in codewars.tests)  # still wrapped


def test_default_difficulty_is_introductory(shared_data: Path) -> None:
    folder = load_benchmark("apps", str(shared_data / "apps" / "folder_layout"))
    assert sorted(p.problem_id for p in folder.problems) == ["2404", "4184"]
    with pytest.raises(DataError, match=r"no introductory problems among 50 rows \(interview 50\)"):
        load_benchmark("apps", str(shared_data / "apps" / "interview.jsonl"))


def test_release_layout_with_split_folders(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "apps" / "folder_layout"
    for split, names in (("test", ["0001", "2404"]), ("train", ["0111", "4184"])):
        for name in names:
            shutil.copytree(src / name, tmp_path / split / name)
    test = load_benchmark("apps", str(tmp_path), difficulty="all")
    train = load_benchmark("apps", str(tmp_path), difficulty="all", split="train")
    assert [p.problem_id for p in test.problems] == ["1", "2404"]
    assert [p.problem_id for p in train.problems] == ["111", "4184"]


# --- the seeded slice ------------------------------------------------------------------------


def test_subset_is_seeded_recorded_and_independent_of_row_order(
    shared_data: Path, tmp_path: Path
) -> None:
    raw = _rows(shared_data / "apps" / "introductory.jsonl")
    shuffled = tmp_path / "shuffled.jsonl"
    rows = raw[:]
    random.Random(7).shuffle(rows)
    shuffled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    a = load_benchmark("apps", str(shared_data / "apps" / "introductory.jsonl"), subset=10)
    b = load_benchmark("apps", str(shuffled), subset=10)
    ids = [p.problem_id for p in a.problems]
    assert ids == [p.problem_id for p in b.problems]
    assert len(set(ids)) == 10 and set(ids) <= {str(r["problem_id"]) for r in raw}
    expected = random.Random(0).sample(sorted(r["problem_id"] for r in raw), 10)
    assert ids == [str(i) for i in sorted(expected)]
    other = load_benchmark("apps", str(shuffled), subset=10, subset_seed=1)
    assert [p.problem_id for p in other.problems] != ids
    selection = a.problems[0].metadata["selection"]
    assert selection == {
        "split": "test", "difficulty": "introductory", "pool": 50, "subset": 10, "seed": 0
    }  # fmt: skip
    # as strings, the way `-o subset=10` may pass them
    assert [
        p.problem_id for p in load_benchmark("apps", str(shuffled), subset="10").problems
    ] == ids


def test_choose_subset_takes_all_when_pool_is_small() -> None:
    assert choose_subset([5, 3, 9], 200, 0) == [3, 5, 9]
    assert choose_subset([5, 3, 9], 0, 0) == [3, 5, 9]
    assert len(choose_subset(list(range(1000)), 200, 0)) == 200


def test_explicit_ids_and_missing_ids(shared_data: Path) -> None:
    path = str(shared_data / "apps" / "introductory.jsonl")
    result = load_benchmark("apps", path, ids="2404, 2361,99999")
    assert [p.problem_id for p in result.problems] == ["2361", "2404"]
    assert [(e.record_id, "not among" in e.reason) for e in result.errors] == [("99999", True)]
    with pytest.raises(DataError, match="99999"):
        load_benchmark("apps", path, ids="99999", strict=True)


# --- malformed records -----------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_malformed_records_are_reported_with_id_and_reason(
    shared_data: Path, tmp_path: Path
) -> None:
    raw = _rows(shared_data / "apps" / "introductory.jsonl")
    good, no_tests, no_solutions, uneven, bad_io = (dict(r) for r in raw[:5])
    no_tests["input_output"] = ""
    no_solutions["solutions"] = ""
    io = json.loads(uneven["input_output"])
    uneven["input_output"] = json.dumps({"inputs": io["inputs"] + ["x"], "outputs": io["outputs"]})
    bad_io["input_output"] = "{not json"
    path = _write_jsonl(
        tmp_path / "bad.jsonl", [good, no_tests, no_solutions, uneven, bad_io, "{torn line"]
    )
    result = load_benchmark("apps", str(path), subset=0)
    assert sorted(p.problem_id for p in result.problems) == sorted(
        str(r["problem_id"]) for r in (good, no_solutions)
    )
    assert (
        next(
            p for p in result.problems if p.problem_id == str(no_solutions["problem_id"])
        ).reference_solutions
        == ()
    )
    reasons = {e.record_id.split(" ")[0]: e.reason for e in result.errors}
    assert "empty input_output" in reasons[str(no_tests["problem_id"])]
    assert "2 inputs but 1 outputs" in reasons[str(uneven["problem_id"])]
    assert "input_output: invalid JSON" in reasons[str(bad_io["problem_id"])]
    assert "invalid JSON" in reasons["line"] and any(e.record_id == "line 6" for e in result.errors)
    assert all(e.source == str(path) for e in result.errors)
    with pytest.raises(DataError) as info:
        load_benchmark("apps", str(path), subset=0, strict=True)
    message = str(info.value)
    assert str(path) in message and str(no_tests["problem_id"]) in message
    assert "\n" not in message


def test_bad_options_are_clear_errors(shared_data: Path) -> None:
    path = str(shared_data / "apps" / "introductory.jsonl")
    with pytest.raises(DataError, match="difficulty"):
        load_benchmark("apps", path, difficulty="easy")
    with pytest.raises(DataError, match="subset"):
        load_benchmark("apps", path, subset="many")
    with pytest.raises(DataError, match="unknown option"):
        load_benchmark("apps", path, release_version="v6")


# --- hub-schema file formats -----------------------------------------------------------------


def _dicts(result: Any) -> list[dict[str, Any]]:
    return [p.to_dict() for p in result.problems]


def test_hub_schema_formats_agree(shared_data: Path, tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = shared_data / "apps" / "introductory.jsonl"
    raw = _rows(src)[30:45]  # stdin and call-based rows
    jsonl = _write_jsonl(tmp_path / "rows.jsonl", raw)
    expected = _dicts(load_benchmark("apps", str(jsonl)))
    assert len(expected) == 15
    pq.write_table(pa.Table.from_pylist(raw), tmp_path / "rows.parquet")
    (tmp_path / "list.json").write_text(json.dumps(raw))
    (tmp_path / "rows.json").write_text(json.dumps({"rows": raw}))
    datasets.Dataset.from_list(raw).save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict(
        {"test": datasets.Dataset.from_list(raw), "train": datasets.Dataset.from_list(raw[:2])}
    ).save_to_disk(str(tmp_path / "saved_dict"))
    shards = tmp_path / "snapshot" / "data"
    shards.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(raw[:7]), shards / "test-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(raw[7:]), shards / "test-00001-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(raw[:1]), shards / "train-00000-of-00001.parquet")
    for name in ("rows.parquet", "list.json", "rows.json", "saved", "saved_dict", "snapshot"):
        result = load_benchmark("apps", str(tmp_path / name))
        assert result.errors == [], name
        assert _dicts(result) == expected, name


# --- offline ---------------------------------------------------------------------------------


def _no_hub_library(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the hub library must not be called when offline")

    monkeypatch.setattr(datasets, "load_dataset", refuse)


@pytest.mark.parametrize("var", ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"])
def test_offline_env_fails_fast_with_one_line(monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    _no_hub_library(monkeypatch)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(var, "1")
    with pytest.raises(DataError) as info:
        load_benchmark("apps")
    message = str(info.value)
    assert "\n" not in message
    assert "codeparrot/apps" in message and f"{var} is set" in message
    assert "pass --data PATH" in message and "APPS release folder" in message


def test_unreachable_hub_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    from cppo_bench.benchmarks import _io

    _no_hub_library(monkeypatch)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    probed: list[tuple[str, int]] = []

    def unreachable(address: tuple[str, int], timeout: float) -> None:
        probed.append(address)
        raise OSError("network is unreachable")

    monkeypatch.setattr(_io.socket, "create_connection", unreachable)
    with pytest.raises(DataError, match=r"unreachable.*pass --data PATH"):
        load_benchmark("apps")
    assert probed == [("huggingface.co", 443)]


def test_registered() -> None:
    spec = BENCHMARKS.get("apps")
    assert (spec.hub_id, spec.default_split) == ("codeparrot/apps", "test")


def test_problem_id_zero_is_named_in_errors(shared_data: Path, tmp_path: Path) -> None:
    first = _rows(shared_data / "apps" / "interview.jsonl")[0]
    assert first["problem_id"] == 0
    path = _write_jsonl(tmp_path / "zero.jsonl", [dict(first, input_output="")])
    (error,) = load_benchmark("apps", str(path), difficulty="all").errors
    assert error.record_id == "0 (line 1)"
