"""Run identity holds everything that changes the samples (issue 38 item 2): the model the
backend reports serving, every sampling setting, the data's content, the release. A resume
that changes one is refused naming the field; a new run never starts silently beside an
incomplete one; stats never pool runs that differ in identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.benchmarks.demo import packaged_path
from cppo_bench.store.runs import (
    iter_runs,
    read_manifest,
    read_records,
    run_dir_for,
    write_manifest,
)


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


def run_args(out: Path, *extra: str) -> list[str]:
    base = ["run", "--method", "direct", "--bench", "demo", "-k", "2", "--chunk-size", "2"]
    return [*base, "--out", str(out), "--quiet", "--limit", "4", *extra]


def interrupted(out: Path, demo, *extra: str, model_id: str = "scripted-model") -> Path:
    """A run stopped after its first chunk (the backend dies on the second)."""
    calls = [0]
    backend = ScriptedBackend(demo, model_id=model_id)
    inner = backend.respond

    def respond(req):
        calls[0] += 1
        if calls[0] > 4:  # 2 problems x K=2 in the first chunk
            raise RuntimeError("server went away")
        return inner(req)

    backend.respond = respond
    with pytest.raises(RuntimeError, match="server went away"):
        invoke(run_args(out, *extra), backend)
    (run_dir,) = iter_runs(out)
    assert read_manifest(run_dir).status == "running" and len(read_records(run_dir)) == 2
    return run_dir


def test_a_changed_setting_does_not_start_silently_beside_an_incomplete_run(tmp_path, demo, caplog):
    run_dir = interrupted(tmp_path, demo, "--max-tokens", "256")
    other = invoke(run_args(tmp_path, "--max-tokens", "128"), ScriptedBackend(demo))
    assert other.exit_code == 1
    assert "incomplete" in other.output and "sampling.max_tokens (256 -> 128)" in other.output
    assert "--new-run" in other.output and list(iter_runs(tmp_path)) == [run_dir]

    forced = invoke(run_args(tmp_path, "--max-tokens", "128", "--new-run"), ScriptedBackend(demo))
    assert forced.exit_code == 0, forced.output
    assert "sampling.max_tokens" in caplog.text  # the note (stderr) names the other run
    assert len(list(iter_runs(tmp_path))) == 2

    resumed = invoke(run_args(tmp_path, "--max-tokens", "256"), ScriptedBackend(demo))
    assert resumed.exit_code == 0 and "2 new, 2 already stored" in resumed.output


def test_a_resume_served_by_another_model_is_refused(tmp_path, demo):
    run_dir = interrupted(tmp_path, demo, "--model", "served", model_id="model-a")
    assert read_manifest(run_dir).extra["model_id"] == "model-a"
    other = invoke(run_args(tmp_path, "--model", "served"), ScriptedBackend(demo, model_id="b"))
    assert other.exit_code == 1
    assert "model-a" in other.output and "now serves b" in other.output
    assert len(read_records(run_dir)) == 2 and read_manifest(run_dir).extra["model_id"] == "model-a"
    same = invoke(
        run_args(tmp_path, "--model", "served"), ScriptedBackend(demo, model_id="model-a")
    )
    assert same.exit_code == 0 and "2 new, 2 already stored" in same.output


def test_the_data_content_is_part_of_the_identity(tmp_path, demo, caplog):
    data = tmp_path / "demo.jsonl"
    data.write_text(packaged_path().read_text())
    first = invoke(run_args(tmp_path / "runs", "--data", str(data)), ScriptedBackend(demo))
    assert first.exit_code == 0, first.output
    records = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    records[0]["statement"] += "\nAn edited sentence."  # same ids, other content
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    again = invoke(run_args(tmp_path / "runs", "--data", str(data)), ScriptedBackend(demo))
    assert again.exit_code == 0, again.output
    assert "data_sha256" in caplog.text  # the note: a new run, and why
    assert len(list(iter_runs(tmp_path / "runs"))) == 2
    out = invoke(["stats", "passk", "--runs", str(tmp_path / "runs"), "--k", "2", "--json"])
    assert len(json.loads(out.stdout)) == 2 and "data_sha256" in out.stderr  # two rows
    older = min(iter_runs(tmp_path / "runs"), key=lambda d: read_manifest(d).created_at)
    m = read_manifest(older)
    del m.extra["identity"]  # as a previous version wrote it: the runs cannot be told apart
    write_manifest(older, m, root=tmp_path / "runs")
    out = invoke(["stats", "passk", "--runs", str(tmp_path / "runs"), "--k", "2", "--json"])
    assert len(json.loads(out.stdout)) == 2 and "cannot be told apart" in out.stderr


def test_a_run_stored_before_identity_was_recorded_is_adopted(tmp_path, demo):
    assert invoke(run_args(tmp_path), ScriptedBackend(demo)).exit_code == 0
    (run_dir,) = iter_runs(tmp_path)
    m = read_manifest(run_dir)
    del m.extra["identity"]  # as the previous version wrote it
    old = run_dir_for(tmp_path, m)
    run_dir.rename(old)
    write_manifest(old, m, root=tmp_path)
    backend = ScriptedBackend(demo)
    again = invoke(run_args(tmp_path), backend)
    assert again.exit_code == 0 and backend.calls == []
    assert list(iter_runs(tmp_path)) == [run_dir] and read_manifest(run_dir).extra["identity"]


def test_stats_never_pool_runs_that_differ_in_identity(tmp_path, demo):
    for tokens in ("256", "128"):
        res = invoke(run_args(tmp_path, "--max-tokens", tokens), ScriptedBackend(demo))
        assert res.exit_code == 0, res.output
    out = invoke(["stats", "passk", "--runs", str(tmp_path), "--k", "2", "--json"])
    assert out.exit_code == 0, out.output
    methods = sorted(c["method"] for c in json.loads(out.stdout))
    assert methods == ["direct[max_tokens=128]", "direct[max_tokens=256]"]
    assert "sampling.max_tokens" in out.stderr
    from cppo_bench.report.cells import identity_notes
    from cppo_bench.report.run_index import RunIndex
    from cppo_bench.report.specs import Selector

    cell = RunIndex(tmp_path).select(Selector(label="Direct", method="direct"),
                                     "scripted-model", "demo", 2)  # fmt: skip
    (note,) = identity_notes(cell)
    assert "several runs share a seed" in note and "sampling.max_tokens" in note


def test_a_field_an_older_run_lacks_does_not_split_its_seeds():
    from cppo_bench.store.identity import differences, varying

    old = {"sampling.max_tokens": 256, "data_sha256": None, "seed": 0}
    new = {"sampling.max_tokens": 256, "data_sha256": "abc", "seed": 1}
    assert varying([old, new]) == [] and differences(old, new) == []
    other = {**new, "sampling.max_tokens": 128}
    assert varying([old, new, other]) == ["sampling.max_tokens"]
