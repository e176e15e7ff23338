"""Issue 29: a number says what really happened. A planner that never produces a valid
tuple shows 0/N valid in the run summary, `runs`, `stats` and the report cell; a report
cell on part of a benchmark carries its n and a partial mark; `stats passk` and `report`
print the same ±, labelled; `--strict-plans` turns invalid tuples into failed branches."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.store.runs import iter_runs, read_records


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


def no_plans(backend: ScriptedBackend):
    """Planner prompts get prose without any method label; the rest as scripted."""

    def reply(req):
        if "labelled A: to" in backend.user(req):
            return "I think we should just solve it somehow."
        return backend.default_reply(req)

    return reply


def rarely_right(backend: ScriptedBackend):
    """A solver right on about 1 branch in 6 (seed even and divisible by 3), so per-problem
    pass@4 varies and a spread is not trivially 0."""
    from run_scripted import WRONG

    def reply(req):
        text = backend.default_reply(req)
        return text if req.params.seed % 3 == 0 else WRONG

    return reply


def _rare(demo) -> ScriptedBackend:
    backend = ScriptedBackend(demo)
    backend.respond = rarely_right(backend)
    return backend


def _run(tmp_path: Path, demo, *extra: str, limit: int = 2, respond=None):
    backend = ScriptedBackend(demo)
    if respond is not None:
        backend.respond = respond(backend)
    args = ["run", "--method", "cppo", "--bench", "demo", "--limit", str(limit)]
    result = invoke([*args, "--out", str(tmp_path), "--quiet", *extra], backend)
    assert result.exit_code == 0, result.output
    return result, backend


def _report_cells(runs: Path, out: Path, *extra: str) -> tuple[dict, str]:
    res = CliRunner().invoke(
        main,
        ["report", "--runs", str(runs), "--out", str(out), "--formats", "csv,md", *extra],
    )
    assert res.exit_code == 0, res.output
    with (out / "tables" / "main_pass4.csv").open(newline="") as fh:
        rows = {(r["row_method"], r["bench"]): r for r in csv.DictReader(fh)}
    return rows, res.output


def test_invalid_planner_shows_zero_valid_everywhere(tmp_path, demo):
    result, _ = _run(tmp_path, demo, respond=no_plans)
    out = " ".join(result.output.split())
    assert "0/2 tuples valid (2 filled (2 with the generic plan)" in out
    assert "DEGRADED" in out
    (run_dir,) = iter_runs(tmp_path)
    # recorded per tuple in the records (and so in every reader)
    for rec in read_records(run_dir).values():
        assert rec.plan_validity[0]["valid"] is False and rec.plan_validity[0]["filled"]
    listing = CliRunner().invoke(main, ["runs", "--out", str(tmp_path), "--json"])
    (row,) = [json.loads(x) for x in listing.output.splitlines()]
    assert row["validity"]["tuples"] == 2 and row["validity"]["valid"] == 0
    assert row["validity"]["degraded"] is True
    table = CliRunner().invoke(main, ["runs", "--out", str(tmp_path)])
    assert "0/2 tuples valid" in " ".join(table.output.split())
    stats = CliRunner().invoke(main, ["stats", "passk", "--runs", str(tmp_path), "--k", "4"])
    assert stats.exit_code == 0, stats.output
    assert "0/2 tuples" in " ".join(stats.output.split())
    stats_json = CliRunner().invoke(
        main, ["stats", "passk", "--runs", str(tmp_path), "--k", "4", "--json"]
    )
    (cell,) = json.loads(stats_json.output)
    assert cell["validity"]["valid"] == 0 and cell["validity"]["tuples"] == 2
    cells, _ = _report_cells(tmp_path, tmp_path / "rep")
    cell = cells[("CPPO inference (untrained planner)", "demo")]
    assert "0/2 tuples valid" in cell["validity"] and "‡" in cell["mark"]
    assert "0/2 tuples valid" in cell["notes"]


def test_valid_planner_is_not_marked(tmp_path, demo):
    result, _ = _run(tmp_path, demo)
    out = " ".join(result.output.split())
    assert "2/2 tuples valid (0 filled, 0 truncated, 0 repaired)" in out
    assert "DEGRADED" not in out


def test_strict_plans_scores_invalid_tuples_as_failed_branches(tmp_path, demo):
    result, backend = _run(tmp_path, demo, "--strict-plans", respond=no_plans)
    # no solver request at all: every tuple was invalid
    assert all("labelled A: to" in backend.user(r) for c in backend.calls for r in c)
    (run_dir,) = iter_runs(tmp_path)
    for rec in read_records(run_dir).values():
        assert not rec.passed
        assert {b.finish_reason for b in rec.branches} == {"invalid_plan"}
        assert rec.plan_validity[0]["strict_failed"] and not rec.plan_validity[0]["filled"]
    out = " ".join(result.output.split())
    assert "0/2 tuples valid (0 filled, 0 truncated, 0 repaired, 2 failed (strict))" in out
    assert "pass@4 0.000 (0/2)" in out
    # the same seeds without --strict-plans: a different run (fill is in its identity)
    _run(tmp_path, demo, respond=no_plans)
    assert len(list(iter_runs(tmp_path))) == 2


def test_strict_plans_keeps_valid_tuples_and_their_cache_keys(tmp_path, demo):
    _, plain = _run(tmp_path / "a", demo)
    _, strict = _run(tmp_path / "b", demo, "--strict-plans")
    keys = [[r.cache_key("m") for r in c] for c in plain.calls]
    assert keys == [[r.cache_key("m") for r in c] for c in strict.calls]


def test_strict_plans_refuses_a_plan_less_method(tmp_path, demo):
    res = invoke(
        ["run", "--method", "direct", "--bench", "demo", "--limit", "1", "--strict-plans",
         "--out", str(tmp_path), "--quiet"],
        ScriptedBackend(demo),
    )  # fmt: skip
    assert res.exit_code != 0 and "no plan tuples" in res.output


def test_partial_cell_shows_n_and_mark_and_filled_counts_numbers(tmp_path, demo):
    _run(tmp_path, demo, limit=2)
    cells, out = _report_cells(tmp_path, tmp_path / "rep")
    cell = cells[("CPPO inference (untrained planner)", "demo")]
    total = len(demo)
    assert cell["n_problems"] == "2" and cell["n_total"] == str(total)
    assert cell["partial"] == "1" and f"2 of the benchmark's {total}" in cell["notes"]
    md = (tmp_path / "rep" / "tables" / "main_pass4.md").read_text()
    assert f"n=2/{total} partial, 1 seed" in md
    # the filled count is the numbers shown (1 demo cell of main_pass4, others elsewhere)
    shown = 0
    for path in (tmp_path / "rep" / "tables").glob("*.csv"):
        with path.open(newline="") as fh:
            shown += sum(1 for r in csv.DictReader(fh) if r["value"] != "")
    assert f"({shown} of " in out and "cells show a number" in out


def test_stats_and_report_print_the_same_labelled_spread(tmp_path, demo):
    # inference-only, two sampling seeds: bootstrap SE over problems, seeds averaged
    args = ["run", "--method", "direct", "--bench", "demo", "--limit", "6", "--seeds", "0,1"]
    assert invoke([*args, "--out", str(tmp_path), "--quiet"], _rare(demo)).exit_code == 0
    cells, _ = _report_cells(tmp_path, tmp_path / "rep", "--resamples", "300")
    cell = cells[("Direct Solve", "demo")]
    res = CliRunner().invoke(
        main,
        ["stats", "passk", "--runs", str(tmp_path), "--k", "4", "--json", "--resamples", "300"],
    )
    (st,) = json.loads(res.output)
    assert st["spread_kind"] == cell["spread_kind"] == "bootstrap_se"
    assert float(cell["value"]) == pytest.approx(st["mean"])
    assert float(cell["spread"]) == pytest.approx(st["spread"])
    # independent oracle: the bootstrap SE of a mean is close to sd * sqrt((n-1)/n) / sqrt(n)
    per_problem = {}
    for run_dir in iter_runs(tmp_path):
        for pid, rec in read_records(run_dir).items():
            per_problem.setdefault(pid, []).append(float(rec.passed))
    x = np.array([np.mean(v) for v in per_problem.values()])
    assert 0 < x.mean() < 1
    analytic = x.std(ddof=0) / np.sqrt(len(x))
    assert st["spread"] == pytest.approx(analytic, rel=0.25)
    table = CliRunner().invoke(
        main, ["stats", "passk", "--runs", str(tmp_path), "--k", "4", "--resamples", "300"]
    )
    text = " ".join(table.output.split())
    assert f"± {st['spread']:.3f} (bootstrap SE, n=6/{len(demo)} partial, 2 seeds)" in text
    md = (tmp_path / "rep" / "tables" / "main_pass4.md").read_text()
    # the report names the ± once per table (every cell shares it), the number in the cell
    assert f"*± is bootstrap SE; every cell: n=6/{len(demo)} partial, 2 seeds*" in md
    assert f"| {st['mean']:.3f} ± {st['spread']:.3f}<sup>" in md
    # the other spread stays available by name, in both commands
    other = CliRunner().invoke(
        main,
        ["stats", "passk", "--runs", str(tmp_path), "--k", "4", "--json", "--spread", "seed-std"],
    )
    (sd,) = json.loads(other.output)
    means = [
        np.mean([float(r.passed) for r in read_records(d).values()]) for d in iter_runs(tmp_path)
    ]
    assert sd["spread_kind"] == "seed_std" and sd["spread"] == pytest.approx(np.std(means, ddof=1))
    cells, _ = _report_cells(tmp_path, tmp_path / "rep2", "--spread", "seed-std")
    assert float(cells[("Direct Solve", "demo")]["spread"]) == pytest.approx(sd["spread"])


def test_trained_runs_are_std_over_training_seeds_in_both(tmp_path, demo):
    for s in (0, 1, 2):
        args = ["run", "--method", "direct", "--bench", "demo", "--limit", "4", "--seeds", str(s),
                "--trained", "pkpo", "--base-model", "scripted-model", "--train-seed", str(s)]  # fmt: skip
        assert invoke([*args, "--out", str(tmp_path), "--quiet"], _rare(demo)).exit_code == 0
    res = CliRunner().invoke(
        main, ["stats", "passk", "--runs", str(tmp_path), "--k", "4", "--json"]
    )
    (st,) = json.loads(res.output)
    means = [
        np.mean([float(r.passed) for r in read_records(d).values()]) for d in iter_runs(tmp_path)
    ]
    assert st["spread_kind"] == "seed_std" and np.std(means) > 0
    assert st["spread"] == pytest.approx(np.std(means, ddof=1))


def _gen_lines(out: Path) -> int:
    runs = list(iter_runs(out)) if out.exists() else []
    cache = runs[0] / "gen_cache.jsonl" if runs else None
    return cache.read_text().count("\n") if cache and cache.exists() else 0


def test_sigint_keeps_every_finished_generation_and_prints_the_resume_command(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests_paths import toy_env

    out = tmp_path / "runs"
    # one chunk of 4 problems x 4 branches: no record is stored before the chunk ends,
    # so what survives the interrupt is the per-generation cache
    cmd = [sys.executable, "-m", "cppo_bench", "run", "--method", "direct", "--bench", "demo",
           "--limit", "4", "--backend", "run_scripted:make", "--out", str(out), "--quiet"]  # fmt: skip
    # the backend holds after its 3rd generation and says so by creating `ready`: the
    # interrupt lands mid-chunk however slow the machine is (no race against a sleep)
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [*cmd, "-b", "pause_after=3", "-b", f"ready={ready}"], env=toy_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    while not ready.exists() and proc.poll() is None:
        time.sleep(0.05)  # waiting for the event, however long it takes
    assert proc.poll() is None, f"the run ended before it held: {proc.communicate()[1][-2000:]}"
    seen = _gen_lines(out)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    kept = _gen_lines(out)
    assert 3 <= seen <= kept < 16  # nothing lost, and not the whole chunk
    (run_dir,) = iter_runs(out)
    assert not read_records(run_dir)  # the chunk never finished: only the cache holds work
    text = " ".join(err.split())
    assert "stored 0 of 4 problems" in text and f"{kept} finished generations" in text
    resume = err.split("resume with: ", 1)[1].splitlines()[0]
    assert resume.startswith("cppo-bench run --method direct --bench demo --limit 4")
    assert "Traceback" not in err
    # the printed command resumes: the kept generations are served from the cache
    again = subprocess.run(
        [sys.executable, "-m", "cppo_bench", *resume.split()[1:]], env=toy_env(),
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"{kept} cached, {16 - kept} generated" in " ".join(again.stdout.split())


def test_stats_names_the_problems_a_seed_lacks(tmp_path, demo):
    for seed, limit in ((0, 3), (1, 2)):
        args = ["run", "--method", "direct", "--bench", "demo", "--limit", str(limit),
                "--seeds", str(seed), "-k", "1", "--out", str(tmp_path), "--quiet"]  # fmt: skip
        assert invoke(args, ScriptedBackend(demo)).exit_code == 0
    lacking = demo[2].problem_id
    res = CliRunner().invoke(main, ["stats", "passk", "--runs", str(tmp_path), "--k", "1"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert f"seed 1 lacks 1 problem(s) ({lacking})" in text
    assert "the 2 problems all seeds share are used" in text
    (cell,) = json.loads(
        CliRunner()
        .invoke(main, ["stats", "passk", "--runs", str(tmp_path), "--k", "1", "--json"])
        .output
    )
    assert cell["missing"] == {"1": [lacking]} and cell["problems"] == 2
