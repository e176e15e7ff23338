"""The training reward splits the node's cores among the node's training processes.

Every rank used to verify with one worker per core at once (issue 43 item 6): 8 ranks on a
node ran 8 sandboxes per core, and the verifier's wall backstop (2 x the time limit + 1 s)
turned the contention into time-outs of correct programs. ``verify_workers: 0`` now means the
cores this process may use // ``LOCAL_WORLD_SIZE`` (set by torch.distributed.run and ``accelerate
launch``), at least 1; a configured number is kept. Observed at the verifier's door: the
``workers`` that a real reward hands ``verify_batch`` while it scores a rollout."""

from __future__ import annotations

import os
from typing import Any

import pytest

from cppo_bench.problem import Problem, Test


def _workers_seen(monkeypatch: pytest.MonkeyPatch, local: str | None, configured: int) -> int:
    from trainers.engine import rewards
    from trainers.engine.config import TrainConfig
    from trainers.engine.rollout import Rollout, RolloutRequest

    seen: list[Any] = []
    real = rewards.verify_batch

    def spy(jobs: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["workers"])
        return real(jobs, **kwargs)

    monkeypatch.setattr(rewards, "verify_batch", spy)
    if local is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local)
    problem = Problem("t", "p", "print 1", (Test("", "1\n"),))
    rollout = Rollout(RolloutRequest(problem, seed=0), (1,), (2,), "print(1)", "stop")
    scored = rewards.reward_from_config(
        TrainConfig(verify_workers=configured, reward_verifier="inprocess")
    )([rollout])
    assert scored[0].passed  # the real verifier ran
    return int(seen[0])


def test_the_cores_are_split_among_the_local_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = len(os.sched_getaffinity(0))
    assert _workers_seen(monkeypatch, None, 0) == cores  # one process: every core
    assert _workers_seen(monkeypatch, "2", 0) == max(1, cores // 2)
    assert _workers_seen(monkeypatch, str(cores + 3), 0) == 1  # never 0
    assert _workers_seen(monkeypatch, "4", 3) == 3  # a configured number is kept
