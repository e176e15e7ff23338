"""``dist_timeout_s`` reaches ``torch.distributed.init_process_group``: through the engine's
Accelerator (a plain training run) and through the CPPO pipeline's shared state (made first,
before the engine's, by ``ranks``). torch's default is 600 s, and NCCL's watchdog then killed
the pipeline while the idle ranks waited in a barrier for the main process's SFT, RM training
and audit (issue 35 item 3). Each path runs in a fresh interpreter, as process 0 of a 2-process
launch; the group's creation is recorded and stopped there (no second process is needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from tests_paths import REPO, free_port, rendezvous_env, toy_env

pytest.importorskip("accelerate")

PROBE = """
import json, sys
import torch.distributed as dist
seen = []
class Stop(Exception):
    pass
def spy(*args, **kwargs):
    seen.append(kwargs.get("timeout").total_seconds() if kwargs.get("timeout") else None)
    raise Stop
dist.init_process_group = spy
import torch.distributed.distributed_c10d as c10d
c10d.init_process_group = spy
try:
    exec(sys.argv[1])
except Stop:
    pass
print(json.dumps(seen))
"""

ENGINE = """
from pathlib import Path
from trainers.engine.config import TrainConfig
from trainers.engine.setup import accelerator
accelerator(TrainConfig(dist_timeout_s=5400), Path("."))
"""

PIPELINE = """
from trainers.cppo_pipeline import ranks
ranks.configure(5400)
ranks.is_main()
"""


def _timeouts(code: str) -> list[float | None]:
    env = toy_env()
    env.update(WORLD_SIZE="2", RANK="0", LOCAL_RANK="0")
    env.update(rendezvous_env(free_port()), LOCAL_WORLD_SIZE="2")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("path", [ENGINE, PIPELINE], ids=["engine", "pipeline"])
def test_the_time_out_key_reaches_process_group_init(path: str) -> None:
    assert _timeouts(path) == [5400.0]


def test_the_default_outlasts_a_long_single_process_stage() -> None:
    from trainers.engine.config import TrainConfig

    assert timedelta(seconds=TrainConfig().dist_timeout_s) >= timedelta(hours=4)
