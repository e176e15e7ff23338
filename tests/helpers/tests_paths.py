"""Paths and environment shared by the trainer tests that start subprocesses."""

from __future__ import annotations

import os
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
