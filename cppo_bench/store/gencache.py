"""Generation cache: every generation a run made, keyed by model + prompt + sampling + seed.

`gen_cache.jsonl` in the run directory is append-only: one line per finished generation,
written and flushed as soon as it finishes (backends that stream results: hf, openai) or
its batch returns (the others, e.g. vllm's offline engine). `CachedBackend` wraps a backend, serves
hits from the file and sends all misses to the real backend in one batch, so a resumed or
re-verified run never regenerates what it already has, and a run whose generations are all
cached never even loads the model (the inner backend is built on the first miss).

This module is the file only: an entry is the stored fields of a generation
(`CachedGeneration`); `CachedBackend` (cppo_bench.runner.cached) turns them into the
backends' results, so the store, which files what a backend produced, imports no backend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypedDict

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.files.fs import exists, open_file
from cppo_bench.store.runs import repair_tail
from cppo_bench.store.schema import token_count
from cppo_bench.util.termsafe import quote

GEN_CACHE = "gen_cache.jsonl"
MAX_CACHE_LINE = 256 << 20  # one generation (a long completion is well below this)


class CachedGeneration(TypedDict):
    """What the cache keeps of one generation: the fields of a backend's result."""

    text: str
    num_tokens: int
    finish_reason: str
    prompt_tokens: int
    extra: dict[str, Any]


class _Params(Protocol):
    @property
    def seed(self) -> int: ...


class _Request(Protocol):  # a backend's GenRequest, as far as the file reads it
    @property
    def tag(self) -> str: ...
    @property
    def params(self) -> _Params: ...


class _Result(Protocol):  # a backend's GenResult, as far as the file reads it
    @property
    def text(self) -> str: ...
    @property
    def num_tokens(self) -> int: ...
    @property
    def finish_reason(self) -> str: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def extra(self) -> dict[str, Any]: ...


class GenCache:
    """The JSONL file plus its in-memory index. A torn last line (killed writer) is cut off
    on open; other unreadable lines are skipped and counted (a cache line is never data)."""

    def __init__(self, path: Path, *, root: Path) -> None:
        self.path, self.root = Path(path), Path(root)
        self.entries: dict[str, CachedGeneration] = {}
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

    def get(self, key: str) -> CachedGeneration | None:
        return self.entries.get(key)

    def put_many(self, items: Sequence[tuple[str, _Request, _Result]]) -> None:
        """Append results (errors are not cached: a resumed run retries them)."""
        lines = []
        for key, req, res in items:
            if res.finish_reason == "error":
                continue
            why = token_count(res.num_tokens) or token_count(res.prompt_tokens)
            if why:  # what the readers would refuse is never stored (the run could not end)
                raise DataError(f"backend result for {quote(req.tag)}: token count {why}")
            self.entries[key] = CachedGeneration(
                text=res.text,
                num_tokens=res.num_tokens,
                finish_reason=res.finish_reason,
                prompt_tokens=res.prompt_tokens,
                extra=res.extra,
            )
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


def _entry(text: str) -> tuple[str, CachedGeneration] | None:
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
    return key, CachedGeneration(
        text=out, num_tokens=n, finish_reason=reason, prompt_tokens=prompt, extra=extra
    )
