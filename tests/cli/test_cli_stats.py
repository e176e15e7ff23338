"""`cppo-bench stats`: each sub-command on a CSV and on a run store, clean errors, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.metrics import bootstrap_p_value, pass_at_k_first
from cppo_bench.store.runs import (
    Branch,
    ProblemRecord,
    RunManifest,
    append_record,
    run_dir_for,
    write_manifest,
)


def run(*args: str):
    return CliRunner().invoke(main, ["stats", *args], catch_exceptions=False)


@pytest.fixture
def outcomes_csv(tmp_path: Path) -> tuple[Path, dict[tuple[str, int], np.ndarray]]:
    """cppo (3 seeds, strong) and pkpo (3 seeds, weaker) and direct (1 run), 120 problems."""
    rng = np.random.default_rng(0)
    lines = ["benchmark,method,seed,problem_id,outcomes,planner_tokens,solver_tokens,trained"]
    truth = {}
    for method, p, seeds in (("cppo", 0.45, 3), ("pkpo", 0.2, 3), ("direct", 0.2, 1)):
        for s in range(seeds):
            mat = rng.random((120, 4)) < p
            truth[(method, s)] = mat
            for i, r in enumerate(mat):
                bits = "".join("1" if x else "0" for x in r)
                tag = "" if method == "direct" else method  # cppo, pkpo: trained checkpoints
                lines.append(
                    f"demo,{method},{s},p{i:03d},{bits},{150 if method == 'cppo' else 0},1000,{tag}"
                )
    path = tmp_path / "outcomes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, truth


def test_passk_json_matches_the_metric(outcomes_csv):
    path, truth = outcomes_csv
    res = run("passk", "--csv", str(path), "--k", "1,4", "--json")
    assert res.exit_code == 0, res.output
    cells = {(c["method"], c["k"]): c for c in json.loads(res.output)}
    seed_means = [pass_at_k_first(truth[("cppo", s)], 4).mean() for s in range(3)]
    assert cells[("cppo", 4)]["mean"] == pytest.approx(np.mean(seed_means))
    assert cells[("cppo", 4)]["std"] == pytest.approx(np.std(seed_means, ddof=1))
    assert cells[("cppo", 4)]["std_over"] == "seeds"
    assert cells[("direct", 1)]["std_over"] == "problems"
    table = run("passk", "--csv", str(path), "--k", "2")
    assert "pass@2" in table.output and "cppo" in table.output


def test_bootstrap_finds_the_planted_gap(outcomes_csv):
    path, truth = outcomes_csv
    res = run(
        "bootstrap",
        "--csv",
        str(path),
        "--a",
        "cppo",
        "--b",
        "pkpo",
        "--resamples",
        "400",
        "--json",
    )
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.output)
    arrays = {
        m: np.array([pass_at_k_first(truth[(m, s)], 4) for s in range(3)]) for m in ("cppo", "pkpo")
    }
    assert row["p_value"] == pytest.approx(bootstrap_p_value(arrays, "cppo", "pkpo", resamples=400))
    assert row["significant"] and row["problems"] == 120 and row["dropped"] == 0
    # without --b: against the strongest of the others
    res = run("bootstrap", "--csv", str(path), "--a", "direct", "--resamples", "200", "--json")
    (row,) = json.loads(res.output)
    assert row["baseline"] == "cppo" and not row["significant"]
    assert "†" in run("bootstrap", "--csv", str(path), "--a", "cppo", "--b", "direct").output


def test_seeds_reproduces_the_study_rows_and_reads_csv(outcomes_csv):
    res = run("seeds", "--deltas", "0.194,0.207,0.232")
    assert "+0.211 [+0.163, +0.259]" in res.output
    path, _ = outcomes_csv
    res = run("seeds", "--csv", str(path), "--a", "cppo", "--b", "pkpo", "--k", "1")
    assert res.exit_code == 0 and "cppo - pkpo" in res.output
    assert run("seeds", "--csv", str(path), "--a", "cppo").exit_code != 0


def test_tokens_efficiency(outcomes_csv):
    path, truth = outcomes_csv
    res = run("tokens", "--csv", str(path), "--k", "4")
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if "direct" in x)
    pk = pass_at_k_first(truth[("direct", 0)], 4).mean()
    assert f"{pk:.3f}" in line and f"{pk / 0.1:.3f}" in line  # 1000 tokens = 0.1 x 10k


def test_bad_input_is_one_clean_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("method,problem_id,outcomes\ncppo,p1,0101\ncppo,p2,01a1\n")
    res = run("passk", "--csv", str(bad))
    assert res.exit_code == 1
    assert "bad.csv:3: 'outcomes' must be a string of 0/1" in res.output
    assert "Traceback" not in res.output
    both = run("passk", "--csv", str(bad), "--runs", str(tmp_path))
    # checked by the API (a Python caller meets it too): a user error, one line, status 1
    assert both.exit_code == 1 and "exactly one of" in both.output
    good = tmp_path / "good.csv"
    good.write_text("method,problem_id,passed\ncppo,p1,1\n")
    assert "no results for benchmark 'x'" in run("passk", "--csv", str(good), "--bench", "x").output


def make_run(root: Path, method: str, plans: list[list[str]], outcomes: list[bool]) -> None:
    manifest = RunManifest(
        method=method, bench="demo", model="smollm2", backend="hf", k=4, seed=0, sampling={},
        method_options={}, data_source="demo", problem_ids=["p1"], problem_ids_hash="h",
        package_version="0.1.0", git_commit=None, created_at="2025-01-01T00:00:00",
    )  # fmt: skip
    rd = run_dir_for(root, manifest)
    write_manifest(rd, manifest, root=root)
    branches = [
        Branch(i, f"x = {i}", "", "AC" if ok else "WA", ok) for i, ok in enumerate(outcomes)
    ]
    append_record(
        rd,
        root=root,
        record=ProblemRecord("p1", branches, planner_tokens=100, solver_tokens=900, plans=plans),
    )


def test_run_store_passk_and_surface_diversity(tmp_path):
    make_run(
        tmp_path,
        "cppo",
        [["sort then sweep", "dp on prefixes", "bfs grid", "try all"]],
        [False, False, True, False],
    )
    make_run(tmp_path, "fixed", [["same plan", "same plan", "same plan", "same plan"]], [False] * 4)
    res = run("passk", "--runs", str(tmp_path), "--k", "2,4", "--json")
    cells = {(c["method"], c["k"]): c["mean"] for c in json.loads(res.output)}
    assert cells == {("cppo", 2): 0.0, ("cppo", 4): 1.0, ("fixed", 2): 0.0, ("fixed", 4): 0.0}
    res = run("diversity", "--runs", str(tmp_path), "--measures", "surf")
    assert res.exit_code == 0, res.output
    cppo = next(x for x in res.output.splitlines() if "cppo" in x)
    fixed = next(x for x in res.output.splitlines() if "fixed" in x)
    assert "1.000" in cppo and "0.000" in fixed  # disjoint plans vs one plan four times
    bad = run("diversity", "--runs", str(tmp_path), "--measures", "surf,size")
    assert bad.exit_code == 1 and "--measures: [1] 'size' is not one of surf" in bad.output
    missing = run("diversity", "--runs", str(tmp_path), "--encoder", str(tmp_path / "nope"))
    assert missing.exit_code == 1 and "not a sentence-transformers folder" in missing.output


def test_stats_module_imports_no_numpy():
    code = "import sys, cppo_bench.cli.stats; print('numpy' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_default_estimator_is_unbiased_for_samples_and_first_k_for_tuples(outcomes_csv):
    """Issue 38 item 5: pass@k < n defaults to the unbiased estimator for exchangeable
    samples (HumanEval's released formula, computed here with scipy) and to the first-K
    rule for a tuple method; each row names the estimator it used."""
    from scipy.special import comb

    path, truth = outcomes_csv
    cells = {
        (c["method"], c["k"]): c
        for c in json.loads(run("passk", "--csv", str(path), "--k", "1,2", "--json").output)
    }
    for k in (1, 2):
        mat = truth[("direct", 0)]
        n, c = mat.shape[1], mat.sum(axis=1)
        want = float(np.mean(1.0 - comb(n - c, k) / comb(n, k)))
        assert cells[("direct", k)]["mean"] == pytest.approx(want)
        assert cells[("direct", k)]["estimator"] == "unbiased"
        first = np.mean([truth[("cppo", s)][:, :k].any(axis=1).mean() for s in range(3)])
        assert cells[("cppo", k)]["mean"] == pytest.approx(first)
        assert cells[("cppo", k)]["estimator"] == "first-K"
    forced = json.loads(run("passk", "--csv", str(path), "--k", "2", "--estimator", "first",
                            "--json").output)  # fmt: skip
    direct = next(c for c in forced if c["method"] == "direct")
    assert direct["estimator"] == "first-K"
    assert direct["mean"] == pytest.approx(truth[("direct", 0)][:, :2].any(axis=1).mean())
    table = run("passk", "--csv", str(path), "--k", "2").output
    assert "estimator" in table and "unbiased" in table and "first-K" in table


def test_one_k_commands_default_to_the_largest_k_the_runs_allow(tmp_path: Path) -> None:
    """Runs made with --k 2 (two branches a problem): seeds and tokens score pass@2 and name
    pass@3/4 as left out, instead of stopping with "pass@4 needs 4"."""
    rng = np.random.default_rng(1)
    lines = ["benchmark,method,seed,problem_id,outcomes,planner_tokens,solver_tokens,trained"]
    two = {}
    for method, p in (("cppo", 0.6), ("pkpo", 0.3)):
        for s in range(3):
            mat = rng.random((40, 2)) < p
            two[(method, s)] = mat
            lines += [f"demo,{method},{s},p{i:02d},{int(a)}{int(b)},0,100,{method}"
                      for i, (a, b) in enumerate(mat)]  # fmt: skip
    path = tmp_path / "k2.csv"
    path.write_text("\n".join(lines) + "\n")
    seeds = CliRunner().invoke(main, ["stats", "seeds", "--csv", str(path), "--a", "cppo",
                                      "--b", "pkpo"])  # fmt: skip
    assert seeds.exit_code == 0, seeds.output
    assert "pass@2" in seeds.output and "pass@4 left out" in seeds.output
    want = [float(two[("cppo", s)].any(axis=1).mean() - two[("pkpo", s)].any(axis=1).mean())
            for s in range(3)]  # fmt: skip
    assert all(f"{d:+.3f}" in seeds.output for d in want)
    tokens = CliRunner().invoke(main, ["stats", "tokens", "--csv", str(path)])
    assert tokens.exit_code == 0 and "pass@2/10k" in tokens.output, tokens.output
    explicit = CliRunner().invoke(main, ["stats", "tokens", "--csv", str(path), "--k", "4"])
    assert explicit.exit_code != 0  # asked for, not defaulted: still refused, in one line


@pytest.mark.parametrize("command", ["passk", "bootstrap"])
def test_more_resamples_than_a_bootstrap_holds_is_one_line(outcomes_csv, command):
    # every bootstrap (stats, report, audit) goes through hierarchical_bootstrap, which
    # refuses resamples x problems past MAX_DRAWS before drawing: not a 477 GiB traceback
    from cppo_bench.metrics.bootstrap import (
        MAX_DRAWS,
        MAX_RESAMPLES,
        BootstrapSizeError,
        hierarchical_bootstrap,
    )

    path, _ = outcomes_csv
    extra = ["--a", "cppo"] if command == "bootstrap" else ["--spread", "bootstrap-se"]
    res = CliRunner().invoke(
        main, ["stats", command, "--csv", str(path), "--resamples", "1000000000", *extra]
    )
    assert res.exit_code == 1 and res.exception is not None
    assert isinstance(res.exception, SystemExit), res.exception  # a message, not a crash
    assert "1,000,000,000 bootstrap resamples" in res.output
    assert len(res.output.strip().splitlines()) == 1
    with pytest.raises(BootstrapSizeError, match=f"at most {MAX_DRAWS // 3000:,} resamples"):
        hierarchical_bootstrap({"x": np.ones(3000)}, resamples=MAX_DRAWS // 1000)
    # few problems: the resamples themselves are kept (per method and seed), so they are capped
    with pytest.raises(BootstrapSizeError, match=f"past the {MAX_RESAMPLES:,} one bootstrap keeps"):
        hierarchical_bootstrap({"x": np.ones(1)}, resamples=MAX_DRAWS)
