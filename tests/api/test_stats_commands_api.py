"""The `stats` commands' API (issue 48 item 2): each subcommand's config, built from keywords
or given whole, one call, the same numbers as the command; a bad setting is one line naming
it. And item 6: runs made with `--k 2` give the k they allow, never "pass@4 needs 4"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as scipy_stats

from cppo_bench.api import build_config
from cppo_bench.api import stats as api
from cppo_bench.api.diversity import DiversityConfig, diversity
from cppo_bench.cli import main
from cppo_bench.errors import DataError
from cppo_bench.store.runs import (
    Branch,
    ProblemRecord,
    RunManifest,
    append_record,
    run_dir_for,
    write_manifest,
)


def two_branch_store(root: Path, seed: int = 3) -> np.ndarray:
    """A run store of `direct` made with --k 2 on 30 problems; the outcome matrix."""
    mat = np.random.default_rng(seed).random((30, 2)) < 0.4
    ids = [f"p{i:02d}" for i in range(len(mat))]
    manifest = RunManifest(
        method="direct", bench="demo", model="smollm2", backend="hf", k=2, seed=0, sampling={},
        method_options={}, data_source="demo", problem_ids=ids, problem_ids_hash="h",
        package_version="0.1.0", git_commit=None, created_at="2025-01-01T00:00:00",
    )  # fmt: skip
    rd = run_dir_for(root, manifest)
    write_manifest(rd, manifest, root=root)
    for pid, row in zip(ids, mat, strict=True):
        branches = [Branch(i, f"x = {i}", "", "AC" if ok else "WA", bool(ok))
                    for i, ok in enumerate(row)]  # fmt: skip
        append_record(rd, root=root, record=ProblemRecord(pid, branches, 10, 90))
    return mat


def test_passk_on_k2_runs_gives_the_k_they_allow(tmp_path: Path) -> None:
    mat = two_branch_store(tmp_path)
    res = CliRunner().invoke(main, ["stats", "passk", "--runs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "pass@1" in res.output and "pass@2" in res.output
    assert "pass@4 left out: demo/direct/seed 0/p00: 2 branches" in res.output  # named, no stop
    table = api.passk(runs=str(tmp_path))
    assert table.attrs["ks"] == [1, 2] and table.attrs["left_out"][0].startswith("pass@4")
    means = dict(zip(table["k"], table["mean"], strict=True))
    # oracle: the unbiased estimator 1 - C(n-c,k)/C(n,k), n = 2 (exchangeable samples)
    assert means[1] == pytest.approx(mat.mean())
    assert means[2] == pytest.approx(mat.any(axis=1).mean())


def test_a_config_and_keywords_are_the_same_call(tmp_path: Path) -> None:
    two_branch_store(tmp_path)
    config = build_config(api.PassKConfig, {"runs": tmp_path, "k": "1,2", "resamples": 50})
    assert config.k == (1, 2) and config.runs == str(tmp_path)
    by_config = api.passk(config)
    by_keywords = api.passk(runs=str(tmp_path), k=[1, 2], resamples=50)
    assert by_config["text"].tolist() == by_keywords["text"].tolist()
    tokens = api.tokens(api.TokensConfig(runs=str(tmp_path)))
    assert tokens.attrs["k"] == 2 and tokens["tokens"].tolist() == [100.0]
    with pytest.raises(DataError, match="settings, not both"):
        api.passk(config, k=[1])


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"k": "1,x"}, "setting k: '1,x': not a comma-separated list of integers"),
        ({"k": [0]}, "every k must be >= 1"),
        ({"estimator": "best"}, "setting estimator: 'best' is not one of auto, first, unbiased"),
        ({"resamples": 1.5}, "setting resamples: expected int"),
        ({"kk": 1}, "unknown setting key kk"),
        ({"csv": "x.csv"}, "exactly one of runs (--runs DIR) or csv (--csv FILE)"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, settings: dict, named: str) -> None:
    two_branch_store(tmp_path)
    with pytest.raises(DataError) as caught:
        api.passk(runs=str(tmp_path), **settings)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_setting_on_the_command_line_names_the_flag(tmp_path: Path) -> None:
    two_branch_store(tmp_path)
    for args, line in ((["passk", "--k", "0"], "Error: --k: every k must be >= 1, got '0'"),
                       (["passk", "--k", "1,x"], "Error: --k: '1,x': not a comma-separated"),
                       (["seeds", "--deltas", "0.1"], "Error: --deltas: give two differences")):  # fmt: skip
        res = CliRunner().invoke(main, ["stats", *args, "--runs", str(tmp_path)])
        assert res.exit_code == 1 and res.output.splitlines()[-1].startswith(line), res.output


def test_seeds_with_given_deltas_is_the_t_interval() -> None:
    deltas = [0.194, 0.207, 0.232]
    (row,) = api.seeds(deltas="0.194,0.207,0.232", confidence=0.9).to_dict("records")
    low, high = scipy_stats.t.interval(0.9, len(deltas) - 1, loc=np.mean(deltas),
                                       scale=scipy_stats.sem(deltas))  # fmt: skip
    assert (row["low"], row["high"]) == (pytest.approx(low), pytest.approx(high))
    with pytest.raises(DataError, match="give deltas, or a and b"):
        api.seeds(runs="runs", a="cppo")
    with pytest.raises(DataError, match="setting deltas: '0.1,y'"):
        api.seeds(deltas="0.1,y")
    with pytest.raises(DataError, match="setting deltas: give two differences at least, got 1"):
        api.seeds(deltas="0.1")  # was a ValueError traceback from the t interval


def test_bootstrap_and_diversity_take_their_configs(tmp_path: Path) -> None:
    two_branch_store(tmp_path)
    with pytest.raises(DataError, match="nothing to compare"):
        api.bootstrap(runs=str(tmp_path), a="direct")  # no baseline in the store
    with pytest.raises(DataError, match="setting measures: \\[0\\] 'size' is not one of"):
        diversity(runs=str(tmp_path), measures="size")
    assert DiversityConfig(runs="r").measures == ("surf", "sem")
    with pytest.raises(DataError, match="no results for benchmark 'nope'"):
        diversity(DiversityConfig(runs=str(tmp_path), bench="nope"))
    (run,) = diversity(DiversityConfig(runs=str(tmp_path), measures=("surf",)))
    assert (run.method, run.kind, run.tuples, run.d_sem) == ("direct", "code", 30, None)
