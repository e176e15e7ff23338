"""A manifest holds what it takes to rerun its run from anywhere (issue 45 item 4): the
resolved data path, the file's sha256 and every loader option, so `samples` and `report
--check` find the data from another folder, and `run --like RUN_DIR` makes the same run
(same identity, same run directory name) again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.store.runs import iter_runs, read_manifest

DEMO = Path(__file__).resolve().parents[2] / "cppo_bench" / "benchmarks" / "demo_problems.jsonl"


@pytest.fixture
def made(tmp_path, monkeypatch):
    """A run made in folder a/ from a relative --data and a loader option."""
    here = tmp_path / "a"
    here.mkdir()
    shutil.copy(DEMO, here / "mine.jsonl")
    monkeypatch.chdir(here)
    backend = ScriptedBackend(load_benchmark("demo").problems)
    args = ["run", "--method", "direct", "--bench", "demo", "--data", "mine.jsonl",
            "-o", "difficulty=easy", "--limit", "2", "-k", "2", "--max-tokens", "64",
            "--out", "runs", "--quiet"]  # fmt: skip
    res = invoke(args, backend)
    assert res.exit_code == 0, res.output
    (run_dir,) = iter_runs(here / "runs")
    elsewhere = tmp_path / "b"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return run_dir.resolve(), here / "mine.jsonl"


def test_the_manifest_records_the_resolved_data_and_its_options(made):
    import hashlib

    run_dir, data = made
    m = read_manifest(run_dir)
    assert m.data_source == str(data.resolve())
    rec = m.extra["data"]
    assert rec["path"] == str(data.resolve())
    assert rec["file_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert rec["options"] == {"difficulty": "easy"}


def test_samples_from_another_folder_show_statements_and_tests(made):
    import cppo_bench as cb

    run_dir, _ = made
    rows = cb.samples(run_dir)
    assert rows and all(r["tests_at_hand"] for r in rows)
    easy = {p.problem_id for p in load_benchmark("demo", difficulty="easy").problems}
    assert {r["problem_id"] for r in rows} <= easy


def test_a_changed_data_file_is_one_line_not_other_problems(made):
    import cppo_bench as cb
    from cppo_bench.errors import DataError

    run_dir, data = made
    data.write_text(data.read_text().replace("Write a function", "Write a program", 1))
    with pytest.raises(DataError, match="changed since the run was made"):
        cb.samples(run_dir)


def test_run_like_from_another_folder_makes_the_same_run(made, tmp_path):
    run_dir, _ = made
    backend = ScriptedBackend(load_benchmark("demo").problems)
    res = invoke(["run", "--like", str(run_dir), "--out", "again", "--quiet"], backend)
    assert res.exit_code == 0, res.output
    (again,) = iter_runs(Path("again"))
    assert again.name == run_dir.name  # the same identity: the same config hash
    a, b = read_manifest(run_dir), read_manifest(again)
    for field in ("method", "bench", "model", "backend", "k", "seed", "sampling",
                  "method_options", "problem_ids", "dataset_hash"):  # fmt: skip
        assert getattr(a, field) == getattr(b, field), field
    assert a.extra["data"] == b.extra["data"] and a.extra["identity"] == b.extra["identity"]
    # without --out: the store RUN_DIR lies in, where the run is complete already
    res = invoke(["run", "--like", str(run_dir), "--quiet"], backend)
    assert res.exit_code == 0, res.output
    assert len(list(iter_runs(run_dir.parents[3]))) == 1
    # an option given on the command line wins over the manifest's
    res = invoke(["run", "--like", str(run_dir), "--out", "k1", "-k", "1", "--quiet"], backend)
    assert res.exit_code == 0 and read_manifest(next(iter_runs(Path("k1")))).k == 1


def test_report_check_commands_carry_the_data_and_options(made):
    from cppo_bench.report.check import _template_flags

    run_dir, data = made
    flags = " ".join(_template_flags(read_manifest(run_dir)))
    assert f"--data {data.resolve()}" in flags and "-o difficulty=easy" in flags


@pytest.mark.parametrize(
    "bad",
    [
        {"path": "/tmp/x\x1b[2Jdata.jsonl", "file_sha256": None, "options": {}},
        {"path": None, "file_sha256": None, "options": {"difficulty": {"nested": 1}}},
        {"path": ["not", "text"], "file_sha256": None, "options": {}},
    ],
)
def test_a_hostile_data_record_is_one_line_at_the_reading_door(made, bad):
    from cppo_bench.errors import DataError

    run_dir, _ = made
    path = run_dir / "manifest.json"
    doc = json.loads(path.read_text())
    doc["extra"]["data"] = bad
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="extra.data"):
        read_manifest(run_dir)
    res = invoke(["run", "--like", str(run_dir), "--out", "x", "--quiet"])
    assert res.exit_code != 0 and "extra.data" in res.output
    assert "Traceback" not in res.output and "\x1b" not in res.output


def test_verify_run_from_another_folder_rejudges_from_the_recorded_file(made, monkeypatch):
    run_dir, _ = made
    # the hub is out of reach: the run's own local file must be what is read
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = invoke(["verify", "--run", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert "hub" not in res.output.lower()
    rejudged = [d for d in iter_runs(run_dir.parents[3]) if d != run_dir]
    assert len(rejudged) == 1
    assert read_manifest(rejudged[0]).problem_ids == read_manifest(run_dir).problem_ids
