"""Generation cache: every generation a run made, keyed by model + prompt + sampling + seed.

`gen_cache.jsonl` in the run directory is append-only: one line per finished generation,
written and flushed as soon as it finishes (backends that stream results: hf, openai) or
its batch returns (the others, e.g. vllm's offline engine). `CachedBackend` wraps a backend, serves
hits from the file and sends all misses to the real backend in one batch, so a resumed or
re-verified run never regenerates what it already has, and a run whose generations are all
cached never even loads the model (the inner backend is built on the first miss).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cppo_bench.backends.base import Backend, GenRequest, GenResult, ProgressFn
from cppo_bench.backends.streaming import LazyBackend, generate_streaming  # noqa: F401
from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.files.fs import exists, open_file
from cppo_bench.store.runs import repair_tail
from cppo_bench.store.schema import token_count
from cppo_bench.util.termsafe import quote

GEN_CACHE = "gen_cache.jsonl"
MAX_CACHE_LINE = 256 << 20  # one generation (a long completion is well below this)


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


class GenCache:
    """The JSONL file plus its in-memory index. A torn last line (killed writer) is cut off
    on open; other unreadable lines are skipped and counted (a cache line is never data)."""

    def __init__(self, path: Path, *, root: Path) -> None:
        self.path, self.root = Path(path), Path(root)
        self.entries: dict[str, GenResult] = {}
        self.skipped = 0
        if exists(self.path):
            repair_tail(self.path, root=self.root)
            self._load()

    def _load(self) -> None:
        # lines split on \n only and decoded one by one: an invalid UTF-8 line, a foreign or
        # over-long one is skipped (and counted), never the end of the cache
        with open_file(self.path, "rb") as fh:
            for line in jsonio.split_lines(fh, MAX_CACHE_LINE):
                entry = _entry(line.text) if line.text is not None else None
                if entry is None:
                    self.skipped += line.text is None or bool(line.text.strip())
                else:
                    self.entries[entry[0]] = entry[1]

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: str) -> GenResult | None:
        return self.entries.get(key)

    def put_many(self, items: Sequence[tuple[str, GenRequest, GenResult]]) -> None:
        """Append results (errors are not cached: a resumed run retries them)."""
        lines = []
        for key, req, res in items:
            if res.finish_reason == "error":
                continue
            why = token_count(res.num_tokens) or token_count(res.prompt_tokens)
            if why:  # what the readers would refuse is never stored (the run could not end)
                raise DataError(f"backend result for {quote(req.tag)}: token count {why}")
            self.entries[key] = res
            lines.append(
                json.dumps(
                    {
                        "key": key,
                        "tag": req.tag,
                        "seed": req.params.seed,
                        "text": res.text,
                        "num_tokens": res.num_tokens,
                        "finish_reason": res.finish_reason,
                        "prompt_tokens": res.prompt_tokens,
                        "extra": res.extra,
                    },
                    default=str,
                )
            )
        if not lines:
            return
        # the writer makes and checks every folder from the store root down
        with open_file(self.path, "a", encoding="utf-8", root=self.root) as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()


def _entry(text: str) -> tuple[str, GenResult] | None:
    """(key, result) of a cache line, or None for a line of the wrong shape."""
    try:
        d = jsonio.loads(text)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    key, out, reason = d.get("key"), d.get("text"), d.get("finish_reason")
    n, prompt, extra = d.get("num_tokens"), d.get("prompt_tokens", 0), d.get("extra") or {}
    if not (isinstance(key, str) and isinstance(out, str) and isinstance(reason, str)):
        return None
    if token_count(n) or token_count(prompt):  # the run store's own range (cppo_bench.store.schema)
        return None
    if not isinstance(n, int) or not isinstance(prompt, int):  # token_count checked: for mypy
        return None
    if not isinstance(extra, dict):
        return None
    return key, GenResult(
        text=out, num_tokens=n, finish_reason=reason, prompt_tokens=prompt, extra=extra
    )


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
        out: list[GenResult | None] = [self.cache.get(k) for k in keys]
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
