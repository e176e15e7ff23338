"""Paths and environment shared by the trainer tests that start subprocesses."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# where `bash .ci/setup --venvs` (the README's test command) builds the side environments of
# the slow vLLM and DeepSpeed tests
TEST_VENVS = Path(
    os.environ.get("CPPO_BENCH_TEST_VENVS", Path.home() / ".cache" / "cppo-bench" / "test-venvs")
)


def venv_python(name: str, override: str, legacy: str) -> Path:
    """The interpreter of side environment ``name``: $override when set, else the one the
    set-up builds, else an older hand-made venv at ``legacy`` (kept working)."""
    if os.environ.get(override):
        return Path(os.environ[override])
    built = TEST_VENVS / name / "bin" / "python"
    return built if built.is_file() or not Path(legacy).is_file() else Path(legacy)


def toy_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(REPO / "tests" / "helpers"), env.get("PYTHONPATH", "")]
    )
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["OMP_NUM_THREADS"] = "1"  # two processes on a small CPU: no oversubscription
    return env


# Every launch a test starts gets its rendezvous port here, the one place a test names one
# (tests/structure/test_suite_layout.py): a port a test computes itself (29000 + pid % 500)
# collides with another launch, a lingering one or any other process on the machine.


def torchrun(nproc: int = 2, python: str | Path = sys.executable) -> list[str]:
    """``torchrun --standalone --nproc_per_node N``, as a user types it, with ``python``'s
    torch: standalone's rendezvous listens on a port the OS picks as it binds, so no other
    launch can hold it."""
    return [
        str(python),
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(nproc),
    ]


def accelerate_launch(python: str | Path, config: Path) -> list[str]:
    """``accelerate launch --config_file CONFIG``; port 0: accelerate asks the OS for a free one."""
    launch = [str(python), "-m", "accelerate.commands.launch", "--config_file", str(config)]
    return [*launch, "--main_process_port", "0"]


def free_port() -> int:
    """A port the OS just handed out, for launchers that take no port 0 (mp.spawn, a
    hand-set rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rendezvous_env(port: int) -> dict[str, str]:
    """The variables torch.distributed's env:// rendezvous reads, on ``port``."""
    return {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
