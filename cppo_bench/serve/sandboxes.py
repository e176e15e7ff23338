"""How many sandboxes the server runs, measured rather than configured: its live child
processes (every sandbox is one child, bwrap or the sandboxed interpreter, started by the
verifier's spawner thread; the server starts nothing else), sampled while a batch runs, with
the most seen at once. `/metrics` reports both, so a supervisor, or the node-pool test, can
check that a node never runs more sandboxes than it has cores whatever `--workers` says."""

from __future__ import annotations

import glob
import os
import threading
import time

SAMPLE_S = 0.02  # a sandbox lives for a whole batch (seconds): 20 ms sees every one


def child_processes() -> int | None:
    """This process's live children, from /proc (None where there is no /proc)."""
    found: set[str] = set()
    files = glob.glob(f"/proc/{os.getpid()}/task/*/children")
    if not files:
        return None
    for path in files:
        try:
            with open(path) as fh:
                found.update(fh.read().split())
        except OSError:  # the thread ended between the listing and the read
            continue
    return len(found)


class SandboxGauge:
    """Sampled while any batch runs (`begin` / `end` around each), once more at each end:
    `now` the last count, `peak` the most seen at once."""

    def __init__(self, interval_s: float = SAMPLE_S) -> None:
        self.interval_s = interval_s
        self.now = 0
        self.peak = 0
        self.measured = child_processes() is not None
        self._lock = threading.Lock()
        self._busy = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        count = child_processes()
        if count is None:
            return
        with self._lock:
            self.now = count
            self.peak = max(self.peak, count)

    def begin(self) -> None:
        with self._lock:
            self._busy += 1
            self._wake.set()
            if self._thread is None and self.measured:
                self._thread = threading.Thread(target=self._run, name="cppo-serve-gauge",
                                                 daemon=True)  # fmt: skip
                self._thread.start()

    def end(self) -> None:
        self.sample()  # the batch's sandboxes are still alive (or kept) here
        with self._lock:
            self._busy -= 1
            if not self._busy:
                self._wake.clear()

    def _run(self) -> None:
        while True:
            self._wake.wait()  # idle: no sampling at all
            self.sample()
            time.sleep(self.interval_s)
