"""`python -m cppo_bench ARGS` in a fresh process, as a user runs it: the hostile-input
suites use it where a hang, a traceback or memory growth must be seen from outside."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 120  # a FIFO read that blocks would never return: fail instead of hanging


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cppo_bench", *args], capture_output=True,
                          text=True, timeout=HANG_GUARD_S, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'helpers'}",
                               **(env or {})})  # fmt: skip
