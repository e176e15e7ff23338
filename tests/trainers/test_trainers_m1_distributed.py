"""CPPO at M = 1 across 2 gloo processes (torch.multiprocessing, CPU).

The study's M = 1 update (A = R_plan) needs nothing from other prompts, so a process holding a
single prompt trains (the earlier batch-local leave-one-out baseline raised there: 8 prompts on
8 GPUs). The ``m1_loo`` option's baseline is over the GLOBAL batch: two processes holding one
prompt each must give exactly the advantages one process gives for both prompts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch  # noqa: E402  (a dependency: never skipped)
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from tests_paths import free_port, rendezvous_env

from trainers.core.cppo import PromptRollouts, SolverBranch, TupleRollout  # noqa: E402
from trainers.core.cppo_ablation import ablation  # noqa: E402
from trainers.core.cppo_joint import joint_rows  # noqa: E402

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

# R_plan = J * max_i r_i: prompt 0 -> 1.0, prompt 1 -> 0.0, prompt 2 -> 1.0, prompt 3 -> 0.0
GATES = (1.0, 1.0, 1.0, 0.0)
BRANCHES = ((1.0, 0.0), (0.0, 0.0), (0.0, 1.0), (1.0, 1.0))


def prompt(i: int) -> PromptRollouts:
    branches = tuple(
        SolverBranch((1, 10 + i, 20 + b), (30 + b, 31), r) for b, r in enumerate(BRANCHES[i])
    )
    return PromptRollouts((TupleRollout((1, 10 + i), (40 + i, 41), GATES[i], branches),))


def planner_advantages_of(step) -> list[float]:
    from trainers.core.batch import Region

    return [r.segments[1].advantage for r in step.rows if r.segments[1].region == Region.PLANNER]


def _worker(rank: int, world: int, port: int, out: str, row: str) -> None:
    os.environ.update(rendezvous_env(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:

        def reduce_sum(t: torch.Tensor) -> torch.Tensor:
            t = t.clone()
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            return t

        per = 4 // world  # each process holds its contiguous share of the 4 prompts
        mine = [prompt(i) for i in range(rank * per, (rank + 1) * per)]
        step = joint_rows(mine, ablation(row), reduce_sum)
        Path(out, f"{row}.{rank}.json").write_text(json.dumps(planner_advantages_of(step)))
    finally:
        dist.destroy_process_group()


@pytest.fixture(autouse=True)
def _no_lingering_tracker():
    """mp.spawn starts multiprocessing's resource tracker, a child that would live as long as
    pytest (later tests check that nothing they started outlives them): stop it after."""
    yield
    from multiprocessing import resource_tracker

    resource_tracker._resource_tracker._stop()


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("row", ["m1", "m1_loo"])
def test_m1_over_processes_equals_one_process(tmp_path: Path, world: int, row: str) -> None:
    single = planner_advantages_of(joint_rows([prompt(i) for i in range(4)], ablation(row)))
    mp.spawn(_worker, args=(world, free_port(), str(tmp_path), row), nprocs=world, join=True)
    spread = [
        a for r in range(world) for a in json.loads((tmp_path / f"{row}.{r}.json").read_text())
    ]
    assert spread == pytest.approx(single, abs=1e-7)
    if row == "m1":  # the study's REINFORCE: A = R_plan
        assert single == [1.0, 0.0, 1.0, 0.0]
    else:  # A_p = R_p - mean of the 3 other prompts' R_plan
        assert single == pytest.approx([1 - 1 / 3, 0 - 2 / 3, 1 - 1 / 3, 0 - 2 / 3])
