"""Each trainer end to end from the CLI with the embedded model on demo_train (slow).

Train (tiny settings), evaluate the checkpoint with `cppo-bench run` on demo, draw the
training-dynamics figure the report shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env

pytest.importorskip("torch")


def _cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "cppo_bench", *args],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["pkpo", "passk_rl", "upskill"])
def test_train_evaluate_report(tmp_path: Path, algo: str) -> None:
    from cppo_bench.report.training_dynamics import training_figures

    runs = tmp_path / "runs"
    out = runs / "train" / f"{algo}-smollm2"
    group = ["--set", "n=4"] if algo != "upskill" else []
    _cli(
        "train",
        algo,
        "--out",
        str(out),
        "--no-progress",
        "--preset",
        "demo",
        "--set",
        "max_steps=2",
        "--set",
        "prompts_per_step=1",
        "--set",
        "max_tokens=48",
        "--set",
        "reference_dtype=float32",
        *group,
    )
    manifest = json.loads((out / "train_manifest.json").read_text())
    assert manifest["algorithm"] == algo and manifest["data"]["eval_sets_checked"][0] == "demo"
    assert manifest["topology"]["num_processes"] == 1 and manifest["git_commit"]
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in steps] == [1, 2]
    keys = {"grad_norm", "param_step_norm", "kl", "entropy", "time_rollout", "tokens_per_s"}
    assert keys <= steps[0].keys()
    if algo == "upskill":
        assert {"r_correct_mean", "r_mi_mean", "combined_reward_var"} <= steps[0].keys()
    else:
        assert {"adv_nonzero_rate", "transformed_reward_var"} <= steps[0].keys()
    ckpt = out / "checkpoints" / "final"
    assert (ckpt / "config.json").is_file() and (ckpt / "tokenizer_config.json").is_file()
    method = "skills" if algo == "upskill" else "direct"  # the prompts each was trained on
    _cli(
        "run",
        "--method",
        method,
        "--bench",
        "demo",
        "--limit",
        "1",
        "-k",
        "1",
        "--max-tokens",
        "32",
        "--model",
        str(ckpt),
        "--trained",
        algo,
        "--base-model",
        manifest["base_model"],
        "--train-seed",
        "0",
        "--out",
        str(runs),
        "--quiet",
    )
    assert [p for p in runs.rglob("manifest.json") if "train" not in p.parts]  # the eval run
    made, skipped = training_figures(runs, tmp_path / "figures")
    assert [f.name for f in made] == [f"training_dynamics_{algo}"], skipped
