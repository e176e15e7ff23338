"""Scores say which tests they rest on and which release the data is (issue 38 item 4): a
LiveCodeBench file without private tests is judged on its public examples only, and `run`,
`stats` and `report` say so; the report's column names the release the runs' data is."""

from __future__ import annotations

import json
from pathlib import Path

from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.benchmarks.testsource import describe, release_label, summarize
from cppo_bench.report.run_index import RunIndex
from cppo_bench.report.tables import bench_label
from cppo_bench.store.runs import iter_runs, read_manifest

PUBLIC = "livecodebench/code_generation_release_v1_public.jsonl"
FULL = "livecodebench/code_generation_full_record_1873_A.json"


def lcb_run(out: Path, data: Path) -> object:
    args = ["run", "--method", "direct", "--bench", "lcb", "--data", str(data), "-k", "2",
            "--limit", "2", "--out", str(out), "--quiet"]  # fmt: skip
    return invoke(args, ScriptedBackend())


def test_release_label_names_what_the_increments_make():
    assert release_label(["v1", "v1"]) == "release_v1"
    assert release_label(["v1", "v2", "v3"]) == "release_v3"
    assert release_label(["v6"]) == "v6"  # that increment alone, not release_v6
    assert release_label(["v2", "v3"]) == "v2_v3"
    assert release_label(["", "v1"]) == "release_v1" and release_label([]) == ""


def test_public_only_data_is_said_in_run_stats_and_report(tmp_path, shared_data):
    res = lcb_run(tmp_path, shared_data / PUBLIC)
    assert res.exit_code == 0, res.output
    problems = load_benchmark("lcb", data=str(shared_data / PUBLIC)).problems
    n_public = sum(len(p.tests) for p in problems)
    want = f"public tests only: {len(problems)}/{len(problems)} problems"
    assert want in " ".join(res.output.split())
    assert "release_v1" in res.output
    (run_dir,) = iter_runs(tmp_path)
    m = read_manifest(run_dir)
    assert m.extra["identity"]["release"] == "release_v1"
    assert m.extra["tests"] == {"problems": len(problems), "tests": {"public": n_public},
                                "public_only": len(problems)}  # fmt: skip
    stats = invoke(["stats", "passk", "--runs", str(tmp_path), "--k", "1"])
    assert stats.exit_code == 0 and "tests (lcb): public tests only" in stats.output
    cells = json.loads(
        invoke(["stats", "passk", "--runs", str(tmp_path), "--k", "1", "--json"]).stdout
    )
    assert "public tests only" in cells[0]["tests"][0]
    label = bench_label("lcb", RunIndex(tmp_path))
    assert label == "LCB release_v1" and "v6" not in label
    report = invoke(["report", "--runs", str(tmp_path), "--out", str(tmp_path / "rep"),
                     "--resamples", "10"])  # fmt: skip
    assert report.exit_code == 0, report.output
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "LCB release_v1" in text and "tests: public tests only" in text


def test_a_record_with_private_tests_is_not_called_public_only(shared_data):
    problems = load_benchmark("lcb", data=str(shared_data / FULL)).problems
    summary = summarize(problems)
    assert summary["public_only"] == 0 and summary["tests"]["private"] > 0
    text = describe(summary)
    assert "private" in text and "public tests only" not in text
