"""The demo preset's first step trains on something (issue 45 item 8): on demo_train it draws
only the call-based problems the embedded 135M model can pass (it never passed a stdin one),
so the first step's reward and gradient are not all 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env


@pytest.mark.parametrize("algo", ["pkpo", "passk_rl", "upskill"])
def test_the_demo_steps_draw_only_problems_the_small_model_can_pass(algo: str) -> None:
    from cppo_bench.benchmarks import load_benchmark
    from trainers.api import resolve
    from trainers.cppo_pipeline.pipeline import select_problems
    from trainers.engine.data import step_problems

    engine_cfg, _ = resolve(algo, preset="demo").config
    pool = select_problems(load_benchmark("demo_train").problems, engine_cfg.problem_ids)
    assert pool and all(t.mode == "call" for p in pool for t in p.tests)
    first = step_problems(pool, 0, engine_cfg.prompts_per_step, 0)
    assert all(t.mode == "call" for p in first for t in p.tests)
    # another training set is not narrowed by the demo_train ids
    other, _ = resolve(algo, preset="demo", bench="apps").config
    assert other.problem_ids == ()


@pytest.mark.slow
def test_the_pkpo_demo_first_step_has_a_reward_and_a_gradient(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "pkpo"
    proc = subprocess.run(
        [sys.executable, "-m", "cppo_bench", "train", "pkpo", "--out", str(out),
         "--no-progress", "--set", "max_steps=1"],  # fmt: skip
        cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (step,) = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert step["reward_mean"] > 0 and step["grad_norm"] > 0, step
