"""Sharded runs (issue #16 part 1): `run --shard I/N` computes a stable hash slice of the
problems, `runs merge` (or any reader, on read) makes the shards one run, and that run is
the unsharded one: same directory hash, same records, same generation cache keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.store.gencache import GEN_CACHE
from cppo_bench.store.index import scan
from cppo_bench.store.runs import iter_runs, read_manifest, read_records, shard_of

TESTS = Path(__file__).resolve().parents[1] / "helpers"
ENV = {**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


def cli(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "cppo_bench", "run", "--method", "cppo", "--bench", "demo",
        "--limit", "12", "--chunk-size", "2", "--backend", "run_scripted:make",
        "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip


def table(records: dict) -> dict:
    """Records minus wall-clock fields (verification time varies run to run)."""
    out = {}
    for pid, rec in records.items():
        d = asdict(rec)
        for b in d["branches"]:
            b.pop("time_s")
        out[pid] = d
    return out


def cache_keys(run_dirs) -> set[str]:
    return {
        json.loads(line)["key"]
        for d in run_dirs
        for line in (Path(d) / GEN_CACHE).read_text().splitlines()
    }


def test_shard_assignment_is_balanced_and_never_moves():
    ids = [f"p{i}" for i in range(3000)]
    sizes = [sum(shard_of(i, 3) == s for i in ids) for s in range(3)]
    assert sum(sizes) == 3000 and max(sizes) - min(sizes) < 150  # ~sqrt(n) spread


def test_a_shard_of_a_prefix_is_a_prefix_of_the_shard(demo):
    """A shard extended with a larger --limit, or run on a dataset with problems added,
    keeps every problem it had: assignment depends on the problem id alone."""
    from cppo_bench.runner.pipeline import EvalSpec, select

    def pick(dataset, limit):
        spec = EvalSpec("direct", "demo", "m", "b", limit=limit, shard=(1, 3))
        return [p.problem_id for p in select(spec, dataset)[0]]

    small, large = pick(demo, 8), pick(demo, None)
    assert small and large[: len(small)] == small and len(large) > len(small)
    fewer = demo[::2]  # the dataset before the odd problems were added, anywhere
    kept = {p.problem_id for p in fewer}
    assert pick(fewer, None) == [i for i in large if i in kept]


def test_three_shard_processes_merge_into_the_unsharded_run(tmp_path):
    whole, sharded = tmp_path / "whole", tmp_path / "sharded"
    procs = [
        subprocess.Popen(cli(sharded, "--shard", f"{i}/3"), env=ENV, stderr=subprocess.PIPE)
        for i in range(3)
    ]
    subprocess.run(cli(whole), env=ENV, check=True, capture_output=True, timeout=300)
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read().decode()
    (unsharded,) = iter_runs(whole)
    shards = list(iter_runs(sharded))
    assert sorted(d.name for d in shards) == [f"{unsharded.name}.shard{i}of3" for i in range(3)]
    assert all(read_manifest(d).shard["count"] == 3 for d in shards)
    # merge on read: every reader already sees one run equal to the unsharded one
    (stored,) = scan(sharded).runs
    assert stored.path.name == unsharded.name and stored.complete and not stored.problems
    assert table(stored.records()) == table(read_records(unsharded))

    merged = invoke(["runs", "merge", "--out", str(sharded), "--quiet"])
    assert merged.exit_code == 0, merged.output
    target = sharded / unsharded.relative_to(whole)
    assert f"merged 3 shards into {target}" in merged.output
    assert list(read_records(target)) == list(read_records(unsharded))  # dataset order
    assert table(read_records(target)) == table(read_records(unsharded))
    assert cache_keys([target]) == cache_keys([unsharded]) == cache_keys(shards)
    m, u = read_manifest(target), read_manifest(unsharded)
    assert m.config_hash() == u.config_hash() and m.problem_ids == u.problem_ids
    assert m.status == "complete" and m.shard is None and len(m.extra["merged_from"]) == 3

    # stats and runs treat it exactly as the unsharded run
    def passk(store: Path) -> list:
        out = invoke(["stats", "passk", "--runs", str(store), "--k", "1,4", "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    assert passk(sharded) == passk(whole)
    rows = [
        json.loads(x)
        for x in invoke(["runs", "--out", str(sharded), "--json"]).stdout.split("\n")
        if x
    ]
    # the merged run did all it was asked (--limit 12); `runs` says so as stats does: partial
    assert [(r["done"], r["total"], r["status"]) for r in rows] == [
        (12, 12, "partial: 12/32 of the benchmark")
    ]
    # the unsharded command resumes the merged run and finds nothing to do
    again = subprocess.run(cli(sharded), env=ENV, check=True, capture_output=True, timeout=300)
    assert b"0 new, 12 already stored" in again.stdout


def test_missing_shard_is_reported_by_name(tmp_path, demo):
    for i in (0, 2):
        args = ["run", "--method", "direct", "--bench", "demo", "-k", "2", "--limit", "9"]
        out = invoke(
            [*args, "--shard", f"{i}/3", "--out", str(tmp_path), "--quiet"], ScriptedBackend(demo)
        )
        assert out.exit_code == 0, out.output
    name = next(iter_runs(tmp_path)).name.split(".shard")[0] + ".shard1of3"
    merged = invoke(["runs", "merge", "--out", str(tmp_path), "--quiet"])
    assert merged.exit_code != 0
    assert "shard 1/3 missing" in merged.stderr and name in merged.stderr
    assert "Traceback" not in merged.output
    (row,) = [
        json.loads(x)
        for x in invoke(["runs", "--out", str(tmp_path), "--json"]).stdout.split("\n")
        if x
    ]
    assert row["status"] == "incomplete" and row["total"] == 9 and row["done"] < 9
    assert any("shard 1/3 missing" in p for p in row["problems"])
    stats = invoke(["stats", "passk", "--runs", str(tmp_path), "--k", "2", "--json"])
    assert stats.exit_code == 0 and "shard 1/3 missing" in stats.stderr


def test_shards_with_different_limits_or_unfinished_problems_are_not_merged(tmp_path, demo):
    base = ["run", "--method", "direct", "--bench", "demo", "-k", "1", "--out", str(tmp_path)]
    for shard, limit in (("0/2", "6"), ("1/2", "8")):
        invoke([*base, "--quiet", "--limit", limit, "--shard", shard], ScriptedBackend(demo))
    merged = invoke(["runs", "merge", "--out", str(tmp_path), "--quiet"])
    assert merged.exit_code != 0 and "different --limit" in merged.stderr
    # the short shard catches up with a larger limit: the same shard run is extended
    invoke([*base, "--quiet", "--limit", "8", "--shard", "0/2"], ScriptedBackend(demo))
    assert len(list(iter_runs(tmp_path))) == 2
    shard0 = next(d for d in iter_runs(tmp_path) if d.name.endswith("shard0of2"))
    lines = (shard0 / "records.jsonl").read_text().splitlines()
    (shard0 / "records.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # one lost record
    merged = invoke(["runs", "merge", "--out", str(tmp_path), "--quiet"])
    assert merged.exit_code != 0
    assert shard0.name in merged.stderr and "1 of" in merged.stderr and "not done" in merged.stderr


@pytest.mark.parametrize("bad", ["3/3", "1", "a/b", "-1/2", "0/0"])
def test_bad_shard_is_one_clear_line(tmp_path, demo, bad):
    args = ["run", "--method", "direct", "--bench", "demo", "--limit", "1", "--shard", bad]
    out = invoke([*args, "--out", str(tmp_path), "--quiet"], ScriptedBackend(demo))
    assert out.exit_code != 0 and "--shard" in out.output and "I/N" in out.output
    assert "Traceback" not in out.output and not tmp_path.joinpath("demo").exists()


def test_merge_completes_an_existing_unsharded_run_without_rewriting_it(tmp_path, demo):
    base = ["run", "--method", "direct", "--bench", "demo", "-k", "2", "--quiet"]
    store, ref = str(tmp_path / "store"), str(tmp_path / "ref")
    invoke([*base, "--out", store, "--limit", "3"], ScriptedBackend(demo))
    (run_dir,) = iter_runs(tmp_path / "store")
    before = (run_dir / "records.jsonl").read_text()
    for i in range(2):
        invoke([*base, "--out", store, "--limit", "8", "--shard", f"{i}/2"], ScriptedBackend(demo))
    merged = invoke(["runs", "merge", "--out", store, "--quiet"])
    assert merged.exit_code == 0, merged.output
    assert "(5 records added)" in merged.output
    assert (run_dir / "records.jsonl").read_text().startswith(before)  # appended only
    invoke([*base, "--out", ref, "--limit", "8"], ScriptedBackend(demo))
    (whole,) = iter_runs(tmp_path / "ref")
    assert table(read_records(run_dir)) == table(read_records(whole))
    assert read_manifest(run_dir).problem_ids == read_manifest(whole).problem_ids


def test_report_reads_unmerged_shards_as_the_unsharded_run(tmp_path, demo):
    base = ["run", "--method", "direct", "--bench", "demo", "-k", "4", "--limit", "6", "--quiet"]
    invoke([*base, "--out", str(tmp_path / "whole")], ScriptedBackend(demo))
    for i in range(3):
        shard = ["--shard", f"{i}/3", "--out", str(tmp_path / "sharded")]
        invoke([*base, *shard], ScriptedBackend(demo))

    def main_table(store: str) -> list[tuple]:
        out = tmp_path / f"report-{store}"
        args = ["report", "--runs", str(tmp_path / store), "--out", str(out)]
        assert invoke([*args, "--resamples", "50"]).exit_code == 0
        text = (out / "tables" / "main_pass4.csv").read_text()
        # the cell names its run by path: the same run directory name under either store
        text = text.replace(str(tmp_path / store), "STORE")
        return [tuple(line.split(",")) for line in text.splitlines()]

    whole = main_table("whole")
    assert whole == main_table("sharded")
    assert any("Direct Solve" in row and "6" in row for row in whole)
