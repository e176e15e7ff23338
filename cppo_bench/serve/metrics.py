"""What `/metrics` reports, in Prometheus' text format: requests by outcome, verdict counts,
tests run, tests per second (over the last minute), the queue's depth and what is running."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque

from cppo_bench.serve.sandboxes import SandboxGauge
from cppo_bench.verifier import VERDICTS, VerifyResult

WINDOW_S = 60.0  # tests per second: over this trailing window


class Metrics:
    """Thread-safe counters (batches finish in worker threads, requests in the event loop)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.requests: Counter[str] = Counter()  # by status code
        self.verdicts: Counter[str] = Counter(dict.fromkeys(VERDICTS, 0))
        self.tests = 0
        self.programs = 0
        self.busy_s = 0.0  # seconds spent verifying, summed over batches
        self._recent: deque[tuple[float, int, float]] = deque()  # (finished, tests, seconds)
        self.sandboxes = SandboxGauge()  # measured: the server's live child processes

    def request(self, status: int) -> None:
        with self._lock:
            self.requests[str(status)] += 1

    def batch(self, results: list[VerifyResult], seconds: float) -> None:
        tests = sum(r.tests_total for r in results)
        now = time.monotonic()
        with self._lock:
            self.verdicts.update(r.verdict for r in results)
            self.programs += len(results)
            self.tests += tests
            self.busy_s += seconds
            self._recent.append((now, tests, seconds))
            self._trim(now)

    def _trim(self, now: float) -> None:
        while self._recent and self._recent[0][0] < now - WINDOW_S:
            self._recent.popleft()

    def tests_per_second(self) -> float:
        now = time.monotonic()
        with self._lock:
            self._trim(now)
            span = min(WINDOW_S, max(now - self.started, 1e-9))
            return sum(n for _, n, _ in self._recent) / span

    def seconds_per_batch(self) -> float:
        """The mean time a batch of the last minute took (for Retry-After); 1 s when none
        finished in it. Over the window, not all time: an old slow spell is forgotten."""
        with self._lock:
            self._trim(time.monotonic())
            if not self._recent:
                return 1.0
            return sum(s for _, _, s in self._recent) / len(self._recent)

    def render(self, waiting: int, running: int, capacity: int, draining: bool,
               receiving: int = 0) -> str:  # fmt: skip
        tps = self.tests_per_second()
        with self._lock:
            lines = [
                "# TYPE cppo_serve_queue_depth gauge",
                f"cppo_serve_queue_depth {waiting}",
                "# TYPE cppo_serve_running gauge",
                f"cppo_serve_running {running}",
                "# TYPE cppo_serve_receiving gauge",
                f"cppo_serve_receiving {receiving}",
                "# TYPE cppo_serve_queue_capacity gauge",
                f"cppo_serve_queue_capacity {capacity}",
                "# TYPE cppo_serve_draining gauge",
                f"cppo_serve_draining {int(draining)}",
                *(["# TYPE cppo_serve_sandboxes gauge",
                   f"cppo_serve_sandboxes {self.sandboxes.now}",
                   "# TYPE cppo_serve_sandboxes_peak gauge",
                   f"cppo_serve_sandboxes_peak {self.sandboxes.peak}"]
                  if self.sandboxes.measured else []),
                "# TYPE cppo_serve_tests_per_second gauge",
                f"cppo_serve_tests_per_second {tps:.6g}",
                "# TYPE cppo_serve_tests_total counter",
                f"cppo_serve_tests_total {self.tests}",
                "# TYPE cppo_serve_busy_seconds_total counter",
                f"cppo_serve_busy_seconds_total {self.busy_s:.6g}",
                "# TYPE cppo_serve_programs_total counter",
                f"cppo_serve_programs_total {self.programs}",
                "# TYPE cppo_serve_verdicts_total counter",
                *(f'cppo_serve_verdicts_total{{verdict="{v}"}} {n}'
                  for v, n in sorted(self.verdicts.items()) if v in VERDICTS),
                "# TYPE cppo_serve_requests_total counter",
                *(f'cppo_serve_requests_total{{code="{c}"}} {n}'
                  for c, n in sorted(self.requests.items())),
            ]  # fmt: skip
        return "\n".join(lines) + "\n"
