"""The step sampler never deals a problem twice in one step; the LR schedule counts optimizer
steps (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.problem import Test as ProblemTest
from trainers.engine import data
from trainers.engine.data import step_problems, steps_for


def _problems(n: int) -> list[Problem]:
    return [Problem("t", f"p{i}", f"statement {i}", (ProblemTest("", "1\n"),)) for i in range(n)]


@pytest.mark.parametrize(("n", "per_step"), [(50, 8), (50, 7), (9, 8), (8, 8), (13, 1)])
def test_no_step_holds_a_problem_twice_across_epoch_boundaries(n: int, per_step: int) -> None:
    ps = _problems(n)
    total = steps_for(n, per_step, 30, 0)
    stream = [p.uid for s in range(total) for p in step_problems(ps, s, per_step, seed=7)]
    steps = [stream[i : i + per_step] for i in range(0, len(stream), per_step)]
    straddling = [s for s in range(total) if (s * per_step) // n != ((s + 1) * per_step - 1) // n]
    if n % per_step:
        assert straddling, "the case under test: steps that cross an epoch boundary"
    for s, uids in enumerate(steps):
        assert len(set(uids)) == per_step, f"step {s} holds a problem twice: {uids}"
    # still epoch permutations: every problem exactly once in each epoch's window of the stream
    for e in range(len(stream) // n):
        assert sorted(stream[e * n : (e + 1) * n]) == sorted(p.uid for p in ps)


def test_the_stream_is_stateless_and_seeded() -> None:
    ps = _problems(50)
    forward = [[p.uid for p in step_problems(ps, s, 8, seed=1)] for s in range(120)]
    data._ORDERS.clear()  # a resumed process: no cache, and it starts mid-run
    assert [p.uid for p in step_problems(ps, 93, 8, seed=1)] == forward[93]
    assert [p.uid for p in step_problems(ps, 6, 8, seed=1)] == forward[6]  # and backwards
    assert [[p.uid for p in step_problems(ps, s, 8, seed=1)] for s in range(120)] == forward
    assert [p.uid for p in step_problems(ps, 6, 8, seed=2)] != forward[6]


def test_more_prompts_per_step_than_problems_is_refused() -> None:
    with pytest.raises(DataError, match="prompts_per_step: 8 exceeds the 5 training problems"):
        step_problems(_problems(5), 0, 8, seed=0)


@pytest.mark.parametrize("updates", [1, 3])
def test_the_lr_schedule_steps_once_per_optimizer_step(
    tmp_path: Path, toy_model: Path, updates: int
) -> None:
    pytest.importorskip("torch")
    from toy_task import run

    # linear warm-up over 8 scheduler steps: after k steps the LR is lr * (k + 1) / 8
    run(
        tmp_path / "run",
        toy_model,
        steps=2,
        lr=1e-3,
        warmup_steps=8,
        updates_per_rollout=updates,
        parity_reward=True,
    )
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    lrs = [json.loads(x)["lr"] for x in lines]
    optimizer_steps = [updates * (s + 1) for s in range(2)]
    assert lrs == pytest.approx([1e-3 * (k + 1) / 8 for k in optimizer_steps])
