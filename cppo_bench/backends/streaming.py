"""Calling a backend: `generate_streaming` (results as they finish, or after the batch) and
`LazyBackend` (a backend built on first use). Below the run store, which caches through them."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence

from cppo_bench.backends.base import Backend, GenRequest, GenResult, ProgressFn, ResultFn


def _takes_on_result(backend: Backend) -> bool:
    """The backend streams (`streams_results`) and its generate takes on_result (a
    subclass may override generate without it)."""
    if not getattr(backend, "streams_results", False):
        return False
    try:
        return "on_result" in inspect.signature(backend.generate).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False


def generate_streaming(
    backend: Backend,
    requests: Sequence[GenRequest],
    progress: ProgressFn | None,
    on_result: ResultFn | None,
) -> list[GenResult]:
    """`backend.generate`, with `on_result` called for each result: as it finishes when
    the backend streams (`streams_results`), else after the whole batch."""
    if on_result is not None and _takes_on_result(backend):
        return backend.generate(requests, progress, on_result=on_result)  # type: ignore[call-arg]
    results = backend.generate(requests, progress)
    if on_result is not None:
        for i, result in enumerate(results):
            on_result(i, result)
    return results


class LazyBackend:
    """Builds its backend on first use, so a run whose generations are all cached never
    loads a model. One LazyBackend is shared by the runs of all seeds; its creator closes it."""

    def __init__(self, factory: Callable[[], Backend], name: str) -> None:
        self._factory = factory
        self._backend: Backend | None = None
        self.name = name
        self.load_s = 0.0  # time the factory took (the model load)

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def get(self) -> Backend:
        if self._backend is None:
            start = time.perf_counter()
            self._backend = self._factory()
            self.load_s += time.perf_counter() - start
        return self._backend

    @property
    def model_id(self) -> str:
        return self.get().model_id

    streams_results = True  # forwards on_result, or calls it after the batch (see below)

    def generate(
        self,
        requests: Sequence[GenRequest],
        progress: ProgressFn | None = None,
        on_result: ResultFn | None = None,
    ) -> list[GenResult]:
        return generate_streaming(self.get(), requests, progress, on_result)

    def close(self) -> None:
        if self._backend is not None:
            close = getattr(self._backend, "close", None)  # a plug-in backend may have none
            if close is not None:
                close()
            self._backend = None
