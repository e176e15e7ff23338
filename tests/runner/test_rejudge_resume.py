"""Re-judging is a run like any other (`verify --run`, `cb.rejudge`): its identity records
the data it was judged on (content hash, source), so a re-judge on edited data is another
run and one on the original data is not refused as its duplicate; a re-judge stopped midway
(a full disk) is resumed by the same command, from the records it wrote, and refused only
once it has finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke
from small_fs import FULL, small_fs

import cppo_bench as cb
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.errors import DataError
from cppo_bench.store.identity import content_hash
from cppo_bench.store.runs import RECORDS, iter_runs, read_manifest, read_records


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


@pytest.fixture
def stored(tmp_path, demo) -> Path:
    cb.run("direct", "demo", backend=ScriptedBackend(demo), k=4, limit=6, out=tmp_path / "src")
    (run_dir,) = iter_runs(tmp_path / "src")
    return run_dir


def _edited(tmp_path: Path, demo) -> Path:
    """The demo data with one statement changed: the same ids, another dataset."""
    src = Path(load_benchmark("demo").source)
    lines = src.read_text().splitlines()
    first = json.loads(lines[0])
    key = next(k for k in ("statement", "question", "description") if k in first)
    first[key] = str(first[key]) + "\n(edited)"
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return path


def test_a_rejudge_records_the_data_it_was_judged_on(tmp_path, stored, demo):
    edited = _edited(tmp_path, demo)
    into = tmp_path / "into"
    one = invoke(["verify", "--run", str(stored), "--data", str(edited), "--into", str(into)])
    assert one.exit_code == 0, one.output
    (first,) = iter_runs(into)
    m = read_manifest(first)
    loaded = load_benchmark("demo", str(edited))
    assert m.extra["identity"]["data_sha256"] == content_hash(loaded.problems)
    assert (
        m.extra["identity"]["data_sha256"] != read_manifest(stored).extra["identity"]["data_sha256"]
    )
    assert m.data_source == str(loaded.source)
    # a later re-judge on the original data is another run, not a duplicate of the first
    two = invoke(["verify", "--run", str(stored), "--into", str(into)])
    assert two.exit_code == 0, two.output
    runs = sorted(iter_runs(into))
    assert len(runs) == 2
    (second,) = [r for r in runs if r != first]
    assert (
        read_manifest(second).extra["identity"]["data_sha256"]
        == read_manifest(stored).extra["identity"]["data_sha256"]
    )
    # and each again is the same run: refused, nothing overwritten
    again = invoke(["verify", "--run", str(stored), "--data", str(edited), "--into", str(into)])
    assert again.exit_code == 1 and "already re-judged" in again.output


def test_a_rejudge_stopped_by_a_full_disk_resumes_then_is_refused(tmp_path, stored):
    with small_fs(tmp_path / "fs", size="1m") as fs:
        into = fs.root / "into"
        fs.fill(leave_pages=3)  # room for the folders and the manifest, not for the records
        with pytest.raises(DataError, match=FULL):
            cb.rejudge(stored, out=into)
        (run_dir,) = iter_runs(into)
        assert read_manifest(run_dir).status == "running"
        fs.free()
        done = cb.rejudge(stored, out=into)  # the same call: it continues, never refused
        assert done.run_dir == run_dir
        assert set(read_records(run_dir)) == set(read_records(stored))
        lines = (run_dir / RECORDS).read_text().splitlines()
        assert len(lines) == len(read_records(stored))  # no problem judged twice
        assert read_manifest(run_dir).extra["rejudged"]["finished"] is True
        with pytest.raises(DataError, match="already re-judged"):
            cb.rejudge(stored, out=into)


def test_a_rejudge_killed_between_chunks_continues_from_its_records(tmp_path, stored, monkeypatch):
    from cppo_bench.runner import rejudge as rj

    monkeypatch.setattr(rj, "CHUNK", 2)
    calls = {"n": 0}
    real = rj.append_records

    def dies_after_one(*args, **kwargs):  # the process "killed" after its first chunk
        real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(rj, "append_records", dies_after_one)
    into = tmp_path / "into"
    with pytest.raises(KeyboardInterrupt):
        cb.rejudge(stored, out=into)
    (run_dir,) = iter_runs(into)
    assert len(read_records(run_dir)) == 2
    judged: list[int] = []
    from cppo_bench import verifier  # rejudge imports verify_batch from here when called

    original = verifier.verify_batch

    def counting(jobs, **kw):
        jobs = list(jobs)
        judged.append(len(jobs))
        return original(jobs, **kw)

    monkeypatch.setattr(verifier, "verify_batch", counting)
    done = cb.rejudge(stored, out=into)
    assert sum(judged) == 4 * (len(read_records(stored)) - 2)  # only what was not stored
    assert len(done.records) == len(read_records(stored))


def test_a_torn_last_line_and_a_foreign_manifest_found_by_trying(tmp_path, stored, monkeypatch):
    from cppo_bench.runner import rejudge as rj

    monkeypatch.setattr(rj, "CHUNK", 2)
    real = rj.append_records

    def torn(target, fresh, *, root):  # killed while writing its second chunk
        if read_records(target):
            with (target / RECORDS).open("a") as fh:
                fh.write('{"problem_id": "half')
            raise KeyboardInterrupt
        real(target, fresh, root=root)

    monkeypatch.setattr(rj, "append_records", torn)
    into = tmp_path / "into"
    with pytest.raises(KeyboardInterrupt):
        cb.rejudge(stored, out=into)
    monkeypatch.setattr(rj, "append_records", real)
    done = cb.rejudge(stored, out=into)
    assert len(read_records(done.run_dir)) == len(read_records(stored))
    # a manifest at the target that no re-judge wrote (no `rejudged` mark): never taken over
    m = json.loads((done.run_dir / "manifest.json").read_text())
    del m["extra"]["rejudged"]
    (done.run_dir / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DataError):
        cb.rejudge(stored, out=into)
