"""A run store from elsewhere (issue 27, items 2-4): links never followed out of the store,
one process per run, every record and manifest checked against the schema on read."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from run_scripted import ScriptedBackend

from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.errors import DataError
from cppo_bench.files.fs import StoreLinkError
from cppo_bench.files.lock import RunLock, RunLockedError, lock_path
from cppo_bench.runner.pipeline import EvalSpec, execute
from cppo_bench.store.gencache import GEN_CACHE, GenCache
from cppo_bench.store.index import scan
from cppo_bench.store.runs import MANIFEST, RECORDS, read_manifest, read_records


@pytest.fixture(scope="module")
def problems():
    return load_benchmark("demo", difficulty="medium", limit=3).problems


def spec(**kw) -> EvalSpec:
    return EvalSpec(method="direct", bench="demo", model="scripted-model", backend="scripted",
                   k=4, seed=0, sampling=SamplingParams(max_tokens=64), chunk_size=2, **kw)  # fmt: skip


def fresh_run(tmp_path: Path, problems, limit: int | None = None) -> Path:
    s = spec(limit=limit) if limit else spec()
    return execute(s, problems, ScriptedBackend(problems), tmp_path / "runs").run_dir


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- item 2: links -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [RECORDS, GEN_CACHE])
def test_a_linked_store_file_is_refused_and_its_target_untouched(tmp_path, problems, name):
    run_dir = fresh_run(tmp_path, problems, limit=2)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "precious.txt"
    victim.write_text("keep me\n")
    (run_dir / name).unlink()
    (run_dir / name).symlink_to(victim)
    before = snapshot(outside)
    backend = ScriptedBackend(problems)
    with pytest.raises(StoreLinkError, match="symbolic link") as err:
        execute(spec(), problems, backend, tmp_path / "runs")  # a resume, extending the run
    assert "\n" not in str(err.value) and str(run_dir / name) in str(err.value)
    assert snapshot(outside) == before  # not appended to, not truncated
    assert backend.calls == []  # nothing generated, nothing ran


def test_a_planted_temp_manifest_link_is_replaced_not_written_through(tmp_path, problems):
    run_dir = fresh_run(tmp_path, problems, limit=2)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    (run_dir / (MANIFEST + ".tmp")).symlink_to(victim)
    execute(spec(), problems, ScriptedBackend(problems), tmp_path / "runs")
    assert victim.read_text() == "keep me\n"
    assert read_manifest(run_dir).status == "complete"
    assert not os.path.lexists(run_dir / (MANIFEST + ".tmp"))


def test_a_hard_linked_records_file_is_not_written(tmp_path, problems):
    run_dir = fresh_run(tmp_path, problems, limit=2)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    (run_dir / RECORDS).unlink()
    os.link(victim, run_dir / RECORDS)
    with pytest.raises(StoreLinkError, match="hard links"):
        execute(spec(), problems, ScriptedBackend(problems), tmp_path / "runs")
    assert victim.read_text() == "keep me\n"


def test_a_linked_directory_inside_the_store_is_not_entered(tmp_path, problems):
    outside = tmp_path / "outside"
    outside.mkdir()
    runs = tmp_path / "runs"
    (runs / "demo").mkdir(parents=True)
    (runs / "demo" / "direct").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StoreLinkError, match="symbolic link"):
        execute(spec(limit=1), problems, ScriptedBackend(problems), runs)
    assert list(outside.iterdir()) == []  # no run directory, no lock file written there
    # and readers never descend it: a run placed there is not listed as part of the store
    other = fresh_run(tmp_path / "elsewhere", problems, limit=1)
    (runs / "demo" / "linked").symlink_to(other.parents[1], target_is_directory=True)
    assert scan(runs).runs == []


def test_a_fifo_planted_as_records_does_not_hang(tmp_path, problems):
    run_dir = fresh_run(tmp_path, problems, limit=1)
    (run_dir / RECORDS).unlink()
    os.mkfifo(run_dir / RECORDS)
    with pytest.raises(StoreLinkError, match="not a regular file"):
        read_records(run_dir)


# --- item 3: one process per run ------------------------------------------------------------------


def test_a_second_process_on_a_run_stops_with_one_line_naming_the_holder(tmp_path, problems):
    runs = tmp_path / "runs"
    run_dir = fresh_run(tmp_path, problems, limit=1)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom cppo_bench.files.lock import RunLock\n"
         f"with RunLock({str(run_dir)!r}):\n    print('held', flush=True)\n    time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        before = snapshot(runs)
        backend = ScriptedBackend(problems)
        with pytest.raises(RunLockedError) as err:
            execute(spec(), problems, backend, runs)
        msg = str(err.value)
        assert "\n" not in msg and f"pid {holder.pid}" in msg and socket.gethostname() in msg
        assert backend.calls == [] and snapshot(runs) == before  # no work done twice
        # with --lock-wait it waits; the holder is gone after it is killed
        holder.kill()
        holder.wait()
        done = execute(spec(), problems, ScriptedBackend(problems), runs, lock_wait=5)
        invocations = done.manifest.extra["invocations"]
        assert len(invocations) == 2  # the first run and this one: none lost
    finally:
        holder.kill()
    assert not lock_path(run_dir).exists()


def test_stale_locks_are_broken_and_live_foreign_ones_respected(tmp_path):
    run_dir = tmp_path / "run"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    path = lock_path(run_dir)
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout)}))
    with RunLock(run_dir):  # the dead holder's lock is stale
        assert json.loads(path.read_text())["pid"] == os.getpid()
    path.write_text(json.dumps({"host": "node-17", "pid": 4242}))
    with pytest.raises(RunLockedError, match="host node-17 pid 4242"):
        RunLock(run_dir).acquire()
    old = time.time() - 3600  # a foreign holder that stopped refreshing its lock
    os.utime(path, (old, old))
    with RunLock(run_dir):
        pass


def test_runs_merge_takes_the_shards_locks(tmp_path, problems):
    runs = tmp_path / "runs"
    for i in range(2):
        execute(spec(shard=(i, 2)), problems, ScriptedBackend(problems), runs)
    (run,) = scan(runs).runs
    with RunLock(run.shards[0][0]):
        out = CliRunner().invoke(main, ["runs", "merge", "--out", str(runs), "--quiet"])
    assert out.exit_code == 1 and "run in use by" in out.output and "Traceback" not in out.output
    assert not run.path.exists()
    out = CliRunner().invoke(main, ["runs", "merge", "--out", str(runs), "--quiet"])
    assert out.exit_code == 0, out.output


# --- item 4: records and manifests -----------------------------------------------------------------


def _lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / RECORDS).read_text().splitlines()]


def test_bad_records_are_named_and_never_counted(tmp_path, problems):
    run_dir = fresh_run(tmp_path, problems)
    good = _lines(run_dir)
    lost = dict(good[0], branches=[dict(b, passed="false") for b in good[0]["branches"]])
    foreign = dict(good[1], problem_id="not-in-this-run")
    short = dict(good[2], branches=good[2]["branches"][:1])
    with open(run_dir / RECORDS, "a") as fh:
        for bad in (lost, foreign, short, [1, 2], {"problem_id": 3}):
            fh.write(json.dumps(bad) + "\n")
        fh.write('{"problem_id": "\xff"}\n'.encode("latin-1").decode("latin-1"))
    with open(run_dir / RECORDS, "ab") as fh:
        fh.write(b'{"problem_id": "\xff\xfe"}\n')
    (run,) = scan(tmp_path / "runs").runs
    records = run.records()
    assert len(records) == len(problems)  # the good lines; no done 5/4
    assert records[good[0]["problem_id"]].branches[0].passed is good[0]["branches"][0]["passed"]
    n_good = len(good)
    expected = [f"{run_dir / RECORDS}:{n_good + i}:" for i in range(1, 8)]
    assert [w.split(" bad record")[0] for w in run.skipped] == expected
    assert "field 'passed'" in run.skipped[0] and "not in the run's manifest" in run.skipped[1]
    assert "k=4" in run.skipped[2] and "not UTF-8" in run.skipped[6]
    listing = CliRunner().invoke(main, ["runs", "--out", str(tmp_path / "runs"), "--json"])
    assert listing.exit_code == 0 and "Traceback" not in listing.output
    (row,) = [json.loads(line) for line in listing.stdout.splitlines()]
    assert row["done"] == len(problems) == row["total"]
    with pytest.raises(DataError, match=rf"{RECORDS}:{n_good + 1}: bad record"):
        read_records(run_dir)  # the strict reader stops at the first
    report = CliRunner().invoke(
        main, ["report", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "rep")]
    )
    assert report.exit_code == 0 and "Traceback" not in report.output
    assert f"{RECORDS}:{n_good + 1}: bad record skipped" in report.output.replace("\n", "")


@pytest.mark.parametrize(
    "change, field",
    [({"k": "four"}, "'k'"), ({"k": 0}, "'k'"), ({"seed": True}, "'seed'"),
     ({"model": "m\nrm -rf ~"}, "'model'"), ({"problem_ids": "abc"}, "'problem_ids'"),
     ({"status": "done"}, "'status'"), ({"sampling": {"temperature": float("nan")}}, "sampling"),
     ({"colour": 1}, "colour"), ({"shard": {"index": 3, "count": 2, "positions": []}}, "shard")],
)  # fmt: skip
def test_bad_manifests_are_one_line_naming_the_field(tmp_path, problems, change, field):
    run_dir = fresh_run(tmp_path, problems, limit=1)
    doc = json.loads((run_dir / MANIFEST).read_text())
    doc.update(change)
    (run_dir / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        read_manifest(run_dir)
    assert str(run_dir / MANIFEST) in str(err.value) and field in str(err.value)
    listing = CliRunner().invoke(main, ["runs", "--out", str(tmp_path / "runs")])
    assert listing.exit_code == 0 and "Traceback" not in listing.output
    assert "unreadable" in listing.output


@pytest.mark.parametrize("raw", [b"\xff\xfe{}", b"[" * 100_000, b"{}", b"", b'{"k": 4}'])
def test_corrupt_manifest_bytes_are_one_line(tmp_path, problems, raw):
    run_dir = fresh_run(tmp_path, problems, limit=1)
    (run_dir / MANIFEST).write_bytes(raw)
    with pytest.raises(DataError, match="not a valid run manifest") as err:
        read_manifest(run_dir)
    assert "\n" not in str(err.value)
    report = CliRunner().invoke(main, ["report", "--runs", str(tmp_path / "runs"), "--check"])
    assert "Traceback" not in report.output


def test_an_invalid_utf8_cache_line_does_not_stop_a_resume(tmp_path, problems):
    run_dir = fresh_run(tmp_path, problems, limit=2)
    cache = run_dir / GEN_CACHE
    lines = cache.read_bytes().split(b"\n")
    lines.insert(1, b'{"key": "\xff"}')
    lines.insert(2, '{"key": "a\u2028b", "text": 1}'.encode())
    cache.write_bytes(b"\n".join(lines))
    loaded = GenCache(cache, root=tmp_path)
    assert loaded.skipped == 2 and len(loaded) == len([x for x in lines if x.strip()]) - 2
    backend = ScriptedBackend(problems)
    result = execute(spec(), problems, backend, tmp_path / "runs")  # resumes and extends
    assert result.manifest.status == "complete"
