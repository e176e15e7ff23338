"""The one progress protocol for long work: a callable told how many more units finished.

Backends report finished generations with it (`Backend.generate(requests, progress)`), the run
pipeline forwards it to its reporter, the run-store reader advances it per run directory read,
`runs merge` per run merged, and `stats diversity` per tuple judged. Library code takes a
`ProgressFn | None` and never draws anything; commands draw it with `progress_bar`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cppo_bench.backends.base import ProgressFn

__all__ = ["ProgressFn", "progress_bar"]


@contextmanager
def progress_bar(label: str, total: int | None = None, quiet: bool = False) -> Iterator[ProgressFn]:
    """A transient bar on stderr (stdout stays clean for --json); yields its ProgressFn."""
    from rich.progress import Progress

    from cppo_bench.termsafe import console as Console  # escapes data it prints

    with Progress(console=Console(stderr=True), transient=True, disable=quiet) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
