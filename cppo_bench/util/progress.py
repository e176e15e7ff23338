"""The one progress protocol for long work: a callable told how many more units finished.

Backends report finished generations with it (`Backend.generate(requests, progress)`), the run
pipeline forwards it to its reporter, the run-store reader advances it per run directory read,
`runs merge` per run merged, and `stats diversity` per tuple judged. Library code takes a
`ProgressFn | None` and never draws anything; commands draw it with `progress_bar` (or, for
`run`'s richer line, `cppo_bench.cli.run_view.RichReporter`), both through `Ticker` here.

On a terminal the bar is a transient rich bar. Without one (nohup, a Slurm log, a pipe) a rich
bar shows only its last state when it closes, so a 12-minute PlanSearch stage looked dead: there
`Ticker` writes one plain line at a steady interval instead (as tqdm and lm-eval do in logs),
from a heartbeat thread, so the line comes even while one long backend call is running.
The interval is `CPPO_BENCH_PROGRESS_INTERVAL` seconds (default 30).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

ProgressFn = Callable[[int], None]  # called with the number of results just finished

__all__ = ["Bar", "ProgressFn", "Ticker", "interval_s", "is_terminal", "progress_bar"]

INTERVAL_ENV = "CPPO_BENCH_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 30.0
MIN_INTERVAL_S = 1.0  # a log line a second at most: 1e-300 wrote 17,000 lines in 5 s


def interval_s() -> float:
    """Seconds between plain progress lines: $CPPO_BENCH_PROGRESS_INTERVAL (at least 1),
    else 30; a value that is not a number is one line naming the variable."""
    from cppo_bench.util import env

    return env.number(INTERVAL_ENV, DEFAULT_INTERVAL_S, floor=MIN_INTERVAL_S)


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether progress can be drawn as a live bar on `stream` (stderr by default)."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def clock_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Ticker:
    """Writes `describe(elapsed)` as one plain line every `interval` seconds (on `tick()`,
    which a heartbeat thread also calls), and once more when stopped if it wrote any: work
    shorter than one interval writes nothing, so quick commands keep a quiet log.
    `clock` and `heartbeat=False` let a test drive it without waiting."""

    def __init__(
        self,
        describe: Callable[[float], str],
        *,
        stream: TextIO | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        heartbeat: bool = True,
    ) -> None:
        self.describe, self.clock = describe, clock
        self.stream = stream
        self.interval = interval_s() if interval is None else interval
        self.heartbeat = heartbeat
        self.started = self.last = 0.0
        self.wrote = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _write(self, now: float) -> None:
        from cppo_bench.util.termsafe import safe  # the line quotes ids and model names

        stream = sys.stderr if self.stream is None else self.stream
        stream.write(safe(self.describe(now - self.started)) + "\n")
        stream.flush()
        self.last = now
        self.wrote += 1

    def start(self) -> None:
        self.started = self.last = self.clock()
        if self.heartbeat:
            self._thread = threading.Thread(target=self._beat, daemon=True, name="progress")
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.interval, 5.0)):
            self.tick()

    def tick(self) -> bool:
        """Write the line if `interval` seconds passed since the last one; True if written."""
        with self._lock:
            now = self.clock()
            if now - self.last < self.interval:
                return False
            self._write(now)
            return True

    def line(self, text: str) -> None:
        """A line of its own (e.g. a training step's metrics), in order with the ticks."""
        from cppo_bench.util.termsafe import safe

        with self._lock:
            stream = sys.stderr if self.stream is None else self.stream
            stream.write(safe(text) + "\n")
            stream.flush()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.wrote:
                self._write(self.clock())


class Bar:
    """A ProgressFn (call it with how many more units finished) that can also show a short
    status after its label (``note``): training shows its reward and KL there; ``log`` prints
    a line of its own above the bar (a training step's metrics)."""

    def __init__(self, progress: Any, task: Any, label: str) -> None:
        self._progress, self._task, self._label = progress, task, label

    def __call__(self, n: int) -> None:
        self._progress.advance(self._task, n)

    def note(self, text: str) -> None:
        from cppo_bench.util.termsafe import markup  # a bar's text is rich markup: data escaped

        self._progress.update(self._task, description=markup(f"{self._label} {text}"))

    def log(self, text: str) -> None:
        if not self._progress.disable:
            self._progress.console.print(text, highlight=False, soft_wrap=True)


class PlainBar:
    """`Bar` for a log: counts and notes, written by a `Ticker` as plain lines."""

    def __init__(
        self, label: str, total: int | None, completed: int, quiet: bool, **ticker: Any
    ) -> None:
        self.label, self.total, self.done, self.text = label, total, completed, ""
        self.quiet = quiet
        self.first = completed
        self.ticker = Ticker(self.describe, **ticker)

    def describe(self, elapsed: float) -> str:
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        done = self.done - self.first
        rate = done / elapsed if elapsed > 0 else 0.0
        # as tqdm: units per second, or seconds per unit when a unit takes longer (a step)
        speed = f"{rate:.2f}/s" if rate >= 1 or not done else f"{1 / rate:.1f} s each"
        note = f" {self.text}" if self.text else ""
        return f"{self.label}: {count}{pct} elapsed {clock_text(elapsed)}, {speed}{note}"

    def __call__(self, n: int) -> None:
        self.done += n
        if not self.quiet:
            self.ticker.tick()

    def note(self, text: str) -> None:
        self.text = text

    def log(self, text: str) -> None:
        if not self.quiet:
            self.ticker.line(text)


@contextmanager
def progress_bar(
    label: str,
    total: int | None = None,
    quiet: bool = False,
    completed: int = 0,
    **ticker: Any,
) -> Iterator[Bar | PlainBar]:
    """A transient bar on stderr (stdout stays clean for --json); yields its ProgressFn.
    ``completed``: units already done (a resumed run starts its bar there). Without a
    terminal on stderr: plain lines at a steady interval (``ticker``: `Ticker`'s options)."""
    stream = ticker.get("stream")
    if not is_terminal(stream):
        bar = PlainBar(label, total, completed, quiet, **ticker)
        if quiet:
            yield bar
            return
        bar.ticker.start()
        try:
            yield bar
        finally:
            bar.ticker.stop()
        return
    from rich.progress import Progress

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints
    from cppo_bench.util.termsafe import markup

    # task descriptions are parsed as markup by the bar's columns, not by the console

    with Progress(console=Console(stderr=True), transient=True, disable=quiet) as progress:
        task = progress.add_task(markup(label), total=total, completed=completed)
        yield Bar(progress, task, label)
