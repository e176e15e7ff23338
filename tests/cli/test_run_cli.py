"""`cppo-bench run` / `cppo-bench runs`: in-process with a scripted backend, and a real
subprocess killed with SIGKILL half-way and restarted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
import run_scripted
from click.testing import CliRunner
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.store.runs import RECORDS, iter_runs, read_manifest, read_records

TESTS = Path(__file__).resolve().parents[1] / "helpers"


def _demo_run(out: Path, method: str, *extra: str) -> list[str]:
    """`cppo-bench run` on the demo benchmark into OUT, quiet, with EXTRA flags."""
    return ["run", "--method", method, "--bench", "demo", "--out", str(out), "--quiet", *extra]


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


def test_run_prints_pass_at_k_and_resumes(tmp_path, demo):
    args = _demo_run(tmp_path, "cppo", "--limit", "3")
    first = invoke(args, ScriptedBackend(demo))
    assert first.exit_code == 0, first.output
    assert "pass@4" in first.output and "3 new" in first.output
    (run_dir,) = iter_runs(tmp_path)
    assert str(run_dir) in first.output.replace("\n", "")
    records = read_records(run_dir)
    solved = sum(r.passed for r in records.values())
    assert f"({solved}/3)" in first.output
    backend = ScriptedBackend(demo)
    again = invoke(args, backend)
    assert again.exit_code == 0 and "0 new, 3 already stored" in again.output
    assert backend.calls == []


def test_seeds_make_one_run_each_and_runs_lists_them(tmp_path, demo):
    args = _demo_run(tmp_path, "direct", "--limit", "2", "-k", "2", "--seeds", "0,1")
    result = invoke(args, ScriptedBackend(demo))
    assert result.exit_code == 0, result.output
    assert "pass@2 over seeds" in result.output
    runs = list(iter_runs(tmp_path))
    assert sorted(read_manifest(r).seed for r in runs) == [0, 1]
    listing = invoke(["runs", "--out", str(tmp_path), "--json"])
    rows = [json.loads(line) for line in listing.output.splitlines()]
    assert sorted(r["seed"] for r in rows) == [0, 1]
    for row in rows:
        # --limit 2 finished what it was asked, not the benchmark: partial, as stats says
        n = len(demo)
        assert row["done"] == row["total"] == 2
        assert row["status"] == f"partial: 2/{n} of the benchmark"
        assert row["method"] == "direct" and row["k"] == 2
        recs = read_records(Path(row["path"])).values()
        assert row["pass_at_k"] == sum(r.passed for r in recs) / 2
    table = invoke(["runs", "--out", str(tmp_path)])
    assert "direct" in table.output and "2/2" in table.output
    assert f"partial: 2/{n}" in table.output
    stats = invoke(["stats", "passk", "--runs", str(tmp_path), "--k", "2"])
    assert f"n=2/{n} partial" in stats.output, stats.output
    assert "no runs under" in invoke(["runs", "--out", str(tmp_path / "none")]).output


def test_incomplete_runs_are_listed_as_such(tmp_path, demo):
    invoke(
        _demo_run(tmp_path, "direct", "--limit", "2", "-k", "1"),
        ScriptedBackend(demo),
    )
    (run_dir,) = iter_runs(tmp_path)
    lines = (run_dir / RECORDS).read_text().splitlines()
    (run_dir / RECORDS).write_text(lines[0] + "\n")
    (row,) = [
        json.loads(x)
        for x in invoke(["runs", "--out", str(tmp_path), "--json"]).output.splitlines()
    ]
    assert row["done"] == 1 and row["status"] == "incomplete"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "direct", "--inference", "iid"], "method 'direct' has no option 'inference'"),
        (["--method", "nope"], "unknown method 'nope'"),
        (["--method", "direct", "--bench", "nobench"], "unknown benchmark 'nobench'"),
        (["--method", "cppo", "-m", "tuple_size=0"], "tuple_size must be >= 1"),
        (["--method", "direct", "--seeds", "0,x"], "not a comma-separated list"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, demo, extra, message):
    args = ["run", "--bench", "demo", "--limit", "1", "--out", str(tmp_path), "--quiet"]
    if "--bench" in extra:
        args = ["run", "--limit", "1", "--out", str(tmp_path), "--quiet"]
    result = invoke(args + extra, ScriptedBackend(demo))
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


def test_backend_by_module_path_and_options(tmp_path):
    flags = ("--limit", "1", "-k", "2", "--backend", "run_scripted:make", "--model", "my-model")
    args = _demo_run(tmp_path, "fixed_strategy", *flags, "-b", "delay_s=0")
    result = invoke(args)
    assert result.exit_code == 0, result.output
    (run_dir,) = iter_runs(tmp_path)
    m = read_manifest(run_dir)
    assert m.model == "my-model" and m.backend == "run_scripted:make"
    bad = invoke(
        _demo_run(tmp_path / "x", "fixed_strategy", *flags, "-b", "delay_s=0", "-b", "colour=blue")
    )
    assert bad.exit_code == 0  # the scripted factory ignores unknown options on purpose
    missing = invoke(
        [
            "run",
            "--method",
            "direct",
            "--bench",
            "demo",
            "--backend",
            "no_mod:f",
            "--out",
            str(tmp_path / "y"),
        ]
    )
    assert missing.exit_code != 0 and "cannot import" in missing.output


def _cli(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cppo_bench",
        "run",
        "--method",
        "cppo",
        "--bench",
        "demo",
        "--limit",
        "8",
        "--chunk-size",
        "2",
        "--backend",
        "run_scripted:make",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


def _records(out: Path) -> dict:
    (run_dir,) = iter_runs(out)
    recs = read_records(run_dir)
    table = {}
    for pid, rec in recs.items():
        d = asdict(rec)
        for b in d["branches"]:
            b.pop("time_s")
        table[pid] = d
    return table


def test_sigkill_half_way_then_restart_gives_the_same_records(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    subprocess.run(_cli(clean), env=env, check=True, capture_output=True, timeout=300)
    # slow generations, so the kill lands while later chunks are in flight
    proc = subprocess.Popen(
        _cli(killed, "-b", "delay_s=0.05"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    records = None
    while time.monotonic() < deadline and proc.poll() is None:
        runs = list(iter_runs(killed)) if killed.exists() else []
        if runs and (runs[0] / RECORDS).exists():
            records = (runs[0] / RECORDS).read_text().count("\n")
            if records >= 2:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    (run_dir,) = iter_runs(killed)
    assert 2 <= len(read_records(run_dir)) < 8
    assert read_manifest(run_dir).status == "running"
    subprocess.run(_cli(killed), env=env, check=True, capture_output=True, timeout=300)
    assert read_manifest(run_dir).status == "complete"
    assert _records(killed) == _records(clean)


def test_method_flags_reach_the_manifest(tmp_path, demo):
    args = _demo_run(
        tmp_path,
        "cppo",
        "--limit",
        "1",
        "-k",
        "2",
        "--select",
        "last",
        "--inference",
        "iid",
        "--fill",
        "generic",
        "-m",
        "planner_max_tokens=64",
        "--temperature",
        "0.2",
        "--max-tokens",
        "99",
    )
    result = invoke(args, ScriptedBackend(demo))
    assert result.exit_code == 0, result.output
    (run_dir,) = iter_runs(tmp_path)
    m = read_manifest(run_dir)
    assert m.method_options == {
        "prompt_version": "v2",
        "inference": "iid",
        "select": "last",
        "tuple_size": 4,
        "fill": "generic",
        "planner_max_tokens": 64,
    }
    assert m.sampling == {"temperature": 0.2, "top_p": 0.95, "max_tokens": 99} and m.k == 2


def test_checkpoint_tags_reach_the_manifest_for_the_report(tmp_path, demo):
    base = ["run", "--method", "direct", "--bench", "demo", "--limit", "1", "-k", "2"]
    args = [*base, "--out", str(tmp_path), "--quiet"]
    tagged = [*args, "--trained", "pkpo", "--base-model", "Qwen/Qwen3.5-4B", "--train-seed", "2"]
    result = invoke(tagged, ScriptedBackend(demo))
    assert result.exit_code == 0, result.output
    (run_dir,) = iter_runs(tmp_path)
    extra = read_manifest(run_dir).extra
    assert (extra["trained"], extra["base_model"], extra["train_seed"]) == (
        "pkpo",
        "Qwen/Qwen3.5-4B",
        2,
    )
    from cppo_bench.report.run_index import RunRef  # how the report reads the tags back

    ref = RunRef(run_dir, read_manifest(run_dir))
    assert (ref.trained, ref.column_model, ref.seed) == ("pkpo", "Qwen/Qwen3.5-4B", 2)
    run_scripted.LIVE[:] = [ScriptedBackend(demo)]
    stray = CliRunner().invoke(main, [*args, "--train-seed", "1", "--backend", "run_scripted:live"])
    assert stray.exit_code != 0 and "--trained" in stray.output
