"""The cached backend: a Backend that answers from a run's generation cache
(cppo_bench.store.gencache, the file) and sends only the misses, in one batch, to the real
backend, so a resumed or re-verified run never regenerates what it already has, and a run
whose generations are all cached never even loads the model. It lives with the runner, which
joins a backend to a run, so the store files generations without importing a backend.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from cppo_bench.backends.base import Backend, GenRequest, GenResult, ProgressFn
from cppo_bench.backends.streaming import generate_streaming
from cppo_bench.store.gencache import CachedGeneration, GenCache


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    calls: int = 0  # generate calls that reached the real backend
    generated_tokens: int = 0
    generate_s: float = 0.0  # wall time spent inside the real backend
    cache_s: float = 0.0  # the rest of generate(): cache keys, lookups, appends (overhead)

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.generate_s if self.generate_s > 0 else 0.0


class CachedBackend:
    """A Backend that answers from a GenCache and sends only the misses, in one batch, to
    `inner`. `model_id` keys the cache: the run's model label, known before any model loads.
    Closing it leaves `inner` open (the inner backend is shared across runs)."""

    def __init__(self, inner: Backend, cache: GenCache, model_id: str) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = model_id
        self.name = inner.name
        self.stats = CacheStats()

    def generate(
        self, requests: Sequence[GenRequest], progress: ProgressFn | None = None
    ) -> list[GenResult]:
        entered, outside_s = time.perf_counter(), 0.0  # outside: the backend's own time
        keys = [r.cache_key(self.model_id) for r in requests]
        out: list[GenResult | None] = [_result(self.cache.get(k)) for k in keys]
        # identical requests (same key) are generated once
        todo: dict[str, int] = {}
        for i, (key, hit) in enumerate(zip(keys, out, strict=True)):
            if hit is None and key not in todo:
                todo[key] = i
        n_hits = sum(r is not None for r in out)
        self.stats.hits += n_hits
        if progress and n_hits:
            progress(n_hits)
        if todo:
            misses = [requests[i] for i in todo.values()]
            self.stats.misses += len(misses)
            self.stats.calls += 1
            start = time.perf_counter()
            if hasattr(self.inner, "get"):
                self.inner.get()  # a lazy model loads outside the timed generation
            load_end = time.perf_counter()
            miss_keys = list(todo)
            stored: set[str] = set()

            def store_one(i: int, result: GenResult) -> None:
                # each generation is on disk as soon as it finishes (an interrupt keeps it)
                self.cache.put_many([(miss_keys[i], misses[i], result)])
                stored.add(miss_keys[i])

            fresh = generate_streaming(self.inner, misses, progress, store_one)
            self.stats.generate_s += time.perf_counter() - load_end
            outside_s = time.perf_counter() - start
            if len(fresh) != len(misses):
                raise RuntimeError(
                    f"backend {self.name} returned {len(fresh)} results for {len(misses)} requests"
                )
            self.stats.generated_tokens += sum(r.num_tokens for r in fresh)
            self.cache.put_many(
                [
                    (k, requests[i], r)
                    for (k, i), r in zip(todo.items(), fresh, strict=True)
                    if k not in stored
                ]
            )
            by_key = dict(zip(todo, fresh, strict=True))
            out = [r if r is not None else by_key[k] for k, r in zip(keys, out, strict=True)]
        self.stats.cache_s += time.perf_counter() - entered - outside_s
        return out  # type: ignore[return-value]

    def close(self) -> None:
        """Nothing to release: the cache file is closed after every write."""


def _result(hit: CachedGeneration | None) -> GenResult | None:
    return None if hit is None else GenResult(**hit)
