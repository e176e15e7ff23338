"""The one progress protocol for long work: a callable told how many more units finished.

Backends report finished generations with it (`Backend.generate(requests, progress)`), the run
pipeline forwards it to its reporter, the run-store reader advances it per run directory read,
`runs merge` per run merged, and `stats diversity` per tuple judged. Library code takes a
`ProgressFn | None` and never draws anything; commands draw it with `progress_bar`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cppo_bench.backends.base import ProgressFn

__all__ = ["Bar", "ProgressFn", "progress_bar"]


class Bar:
    """A ProgressFn (call it with how many more units finished) that can also show a short
    status after its label (``note``): training shows its reward and KL there."""

    def __init__(self, progress: Any, task: Any, label: str) -> None:
        self._progress, self._task, self._label = progress, task, label

    def __call__(self, n: int) -> None:
        self._progress.advance(self._task, n)

    def note(self, text: str) -> None:
        self._progress.update(self._task, description=f"{self._label} {text}")


@contextmanager
def progress_bar(
    label: str, total: int | None = None, quiet: bool = False, completed: int = 0
) -> Iterator[Bar]:
    """A transient bar on stderr (stdout stays clean for --json); yields its ProgressFn.
    ``completed``: units already done (a resumed run starts its bar there)."""
    from rich.progress import Progress

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    with Progress(console=Console(stderr=True), transient=True, disable=quiet) as bar:
        task = bar.add_task(label, total=total, completed=completed)
        yield Bar(bar, task, label)
