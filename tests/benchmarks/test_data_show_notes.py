"""`data show`: a folder is read one level deep at most, a summary showing fewer problems
than the source says why, and the two call-mode counts are told apart."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cppo_bench.api.data import summary_rows
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.benchmarks._io import data_files
from cppo_bench.cli import main


def _apps_row(pid: int, difficulty: str) -> dict:
    io = {"inputs": ["1\n"], "outputs": ["1\n"]}
    return {"problem_id": pid, "question": "Echo n.", "solutions": "[]",
            "input_output": json.dumps(io), "difficulty": difficulty, "url": ""}  # fmt: skip


def test_a_folder_is_read_one_level_deep_at_most(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text("")
    deep = tmp_path / "elsewhere" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "test.jsonl").write_text("")
    assert data_files(tmp_path, "test") == [tmp_path / "data" / "test.jsonl"]
    (tmp_path / "top.jsonl").write_text("")
    assert data_files(tmp_path, None) == [tmp_path / "top.jsonl"]  # top level first


def test_left_out_levels_are_noted(tmp_path):
    path = tmp_path / "apps.jsonl"
    rows = [_apps_row(1, "introductory"), _apps_row(2, "interview"), _apps_row(3, "competition")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(main, ["data", "show", "--bench", "apps", "--data", str(path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "1 of 3 rows are introductory" in text and "difficulty=all" in text
    everything = load_benchmark("apps", str(path), difficulty="all")
    assert everything.notes == [] and len(everything.problems) == 3


def test_seeded_subset_is_noted(tmp_path):
    path = tmp_path / "apps.jsonl"
    path.write_text("".join(json.dumps(_apps_row(i, "introductory")) + "\n" for i in range(5)))
    result = load_benchmark("apps", str(path), subset=2)
    assert len(result.problems) == 2
    assert result.notes == ["a seeded subset of 2 of the 5 problems (-o subset=0 shows all)"]


def test_call_mode_counts_are_labelled_apart():
    demo = load_benchmark("demo").problems
    labels = dict(summary_rows(demo))
    assert "problems by test mode" in labels
    assert "distinct function names (call mode)" in labels
