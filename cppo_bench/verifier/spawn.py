"""Starting a sandbox's server process from one long-lived thread (see spawn)."""

from __future__ import annotations

import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

from cppo_bench.verifier import cpus

_SPAWN_LOCK = threading.Lock()
_SPAWNER: ThreadPoolExecutor | None = None


def _unbind() -> None:
    try:
        os.sched_setaffinity(0, cpus.process_cpus())
    except (AttributeError, OSError):
        pass


def spawn(argv: list[str], **kwargs) -> subprocess.Popen:
    """Popen from one long-lived thread. A sandbox's parent-death signal (bwrap's
    --die-with-parent, PR_SET_PDEATHSIG) fires when the *thread* that started it ends, and a
    kept sandbox (pool.keep_sandboxes) outlives the worker thread that first needed it."""
    global _SPAWNER
    with _SPAWN_LOCK:
        if _SPAWNER is None:
            # (free to run anywhere, whichever bound worker thread first needs it)
            _SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="sandbox-spawn",
                                          initializer=_unbind)  # fmt: skip
        spawner = _SPAWNER
    return spawner.submit(lambda: subprocess.Popen(argv, **kwargs)).result()
