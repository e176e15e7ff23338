"""The bounded queue between HTTP requests and the verifier: at most `queue_size` requests
admitted (waiting or running), `lanes` of them verified at once, each by its own
`verify_batch` call (no verdict, problem or scratch is shared between requests; idle
sandboxes are, unless --fresh-sandboxes, reset as between two programs). Past the bound a
request is refused at once (429) instead of piling up behind the others."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from cppo_bench.serve.config import ServeConfig
from cppo_bench.serve.metrics import Metrics
from cppo_bench.verifier import Limits, VerifyJob, VerifyResult, verify_batch


class QueueFull(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the queue is full; retry in {retry_after} s")
        self.retry_after = retry_after


class BatchQueue:
    def __init__(self, config: ServeConfig, metrics: Metrics) -> None:
        self.config = config
        self.metrics = metrics
        self._executor = ThreadPoolExecutor(config.lanes, thread_name_prefix="cppo-serve")
        self._lock = threading.Lock()
        self.admitted = 0  # waiting + running
        self.running = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def waiting(self) -> int:
        return self.admitted - self.running

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the queue ahead, at the recent batch time."""
        rounds = math.ceil(self.admitted / self.config.lanes)
        return max(1, min(60, math.ceil(rounds * self.metrics.seconds_per_batch())))

    def admit(self) -> None:
        """Take a slot or raise QueueFull; the caller must `release` what it took."""
        with self._lock:
            if self.admitted >= self.config.queue_size:
                raise QueueFull(self.retry_after())
            self.admitted += 1
            self._idle.clear()

    def release(self) -> None:
        with self._lock:
            self.admitted -= 1
            if not self.admitted:
                self._idle.set()

    async def run(self, jobs: list[VerifyJob], limits: Limits) -> list[VerifyResult]:
        """Verify one admitted request's jobs (every test run, as a reward needs)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._verify, jobs, limits)

    def _verify(self, jobs: list[VerifyJob], limits: Limits) -> list[VerifyResult]:
        with self._lock:
            self.running += 1
        started = time.monotonic()
        self.metrics.sandboxes.begin()
        try:
            results = verify_batch(jobs, workers=self.config.lane_workers(), all_tests=True,
                                   limits=limits)  # fmt: skip
        finally:
            self.metrics.sandboxes.end()
            with self._lock:
                self.running -= 1
        self.metrics.batch(results, time.monotonic() - started)
        return results

    async def idle(self) -> None:
        """Return once nothing is admitted (the drain waits on this)."""
        await self._idle.wait()

    def close(self) -> None:
        self._executor.shutdown(wait=True)
