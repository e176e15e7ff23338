"""The trainer learns: PKPO raises the verifier reward on held-out prompts of the toy task.

Toy task (tests/helpers/toy_task.py): copy the digit of the prompt into a ``print(d)`` program, scored
by the sandboxed verifier. A random 2-layer policy passes ~1/34 of samples. After 60 PKPO
steps (8 prompts x 8 samples, lr 3e-3, about two minutes of CPU) the held-out pass rate,
measured on 20 prompts never trained on x 8 samples, must exceed the untrained policy's (two
sampling seeds) by far more than sampling noise.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from toy_task import heldout_reward, run, toy_problems

pytest.importorskip("torch")


@pytest.mark.slow
def test_pkpo_raises_heldout_reward(tmp_path: Path, toy_model: Path) -> None:
    held = toy_problems(20, 0, "heldout")
    assert not {p.statement for p in held} & {p.statement for p in toy_problems(40, 0, "train")}
    base = [heldout_reward(toy_model, held, 8, seed=s) for s in (1, 2)]
    result = run(
        tmp_path / "run",
        toy_model,
        steps=60,
        problems=40,
        prompts_per_step=8,
        lr=3e-3,
        kl_beta=0.001,
    )
    trained = heldout_reward(result.checkpoint, held, 8, seed=1)
    n = len(held) * 8
    noise = math.sqrt(max(max(base), 1 / n) * (1 - max(base)) / n)  # binomial std of the base
    print(f"held-out pass rate: untrained {base}, trained {trained:.3f} (noise {noise:.3f})")
    assert trained > max(base) + max(0.08, 5 * noise)
    steps = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    first = sum(m["reward_mean"] for m in steps[:10]) / 10
    last = sum(m["reward_mean"] for m in steps[-10:]) / 10
    assert last > first + 0.1  # the training reward rose too
