"""Run orchestration: problems -> method -> verifier -> run store, chunk by chunk.

Problems are processed in chunks of `chunk_size`: the method sends each stage of a chunk to
the backend as one batch, the verifier runs the chunk's programs as one parallel batch, and
the chunk's records are appended in one write. Verification runs in the background while
the next chunk generates (the verifier works in its own processes), so its time hides behind
generation. A killed run loses at most the chunks in flight (one generating, one verifying),
and even their finished generations are in the generation cache. Resuming
= the same command: problems already in records.jsonl are skipped, and the rest ask the
cache first with the very same per-request seeds.

`execute` gets the whole dataset and selects from it: the first `limit` problems, then the
ones of `shard` I/N. The run's identity is the dataset's, so a larger limit extends the same
run, a smaller one reads a prefix of it, and every shard computes exactly what the unsharded
run computes for its problems (seeds and cache keys depend on the problem, not its place).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cppo_bench.backends.base import Backend, SamplingParams
from cppo_bench.benchmarks.testsource import release_label
from cppo_bench.benchmarks.testsource import summarize as summarize_tests
from cppo_bench.files.fs import check_under, exists, make_dirs
from cppo_bench.files.lock import RunLock
from cppo_bench.methods import METHODS, Method
from cppo_bench.problem import LoadResult, Problem
from cppo_bench.runner.cached import CachedBackend, CacheStats
from cppo_bench.runner.scoring import score_chunk
from cppo_bench.store.gencache import GEN_CACHE, GenCache
from cppo_bench.store.identity import (
    MODEL_KEY,
    check_new_run,
    check_served_model,
    content_hash,
    model_fingerprint,
)
from cppo_bench.store.opener import (
    adopt_legacy,
    adopt_unfingerprinted,
    adopt_unidentified,
    open_run,
)
from cppo_bench.store.runs import (
    MANIFEST,
    ProblemRecord,
    RunManifest,
    append_records,
    ids_hash,
    read_manifest,
    read_records,
    run_dir_for,
    shard_of,
    write_manifest,
)
from cppo_bench.store.summary import summarize
from cppo_bench.util.gitinfo import git_commit
from cppo_bench.util.termsafe import warn
from cppo_bench.util.version import __version__

log = logging.getLogger(__name__)


def _note(line: str) -> None:
    warn(log, line)


def run_identity(dataset: Sequence[Problem]) -> dict[str, Any]:
    """What the manifest's identity adds to its problem ids: the data's content hash, and
    the benchmark release the loader says the data is (cppo_bench.store.identity)."""
    ident: dict[str, Any] = {"data_sha256": content_hash(dataset)}
    release = release_label(str(p.metadata.get("release") or "") for p in dataset)
    if release:
        ident["release"] = release
    return ident


def model_identity(model: str | None) -> dict[str, str]:
    """The content of a local model, as an identity entry (none for a hub id or a server)."""
    fingerprint = model_fingerprint(model)
    return {MODEL_KEY: fingerprint} if fingerprint else {}


@dataclass(frozen=True)
class EvalSpec:
    """What one run computes (one seed). `model` is the model label: the --model value, or
    the backend's default model name; it names the run directory and keys the cache."""

    method: str
    bench: str
    model: str
    backend: str
    k: int = 4
    seed: int = 0
    sampling: SamplingParams = field(default_factory=SamplingParams)
    method_options: Mapping[str, Any] = field(default_factory=dict)
    chunk_size: int = 16
    verify_workers: int | None = None
    # manifest.extra entries, e.g. a trained checkpoint's tags {trained, base_model, train_seed}
    tags: Mapping[str, Any] = field(default_factory=dict)
    limit: int | None = None  # the first `limit` problems of the dataset (None: all)
    shard: tuple[int, int] | None = None  # (I, N): only the dataset problems of shard I of N
    # start this run even though an incomplete run of the same method, bench, model, K and
    # seed with another identity is stored (cppo_bench.store.identity.check_new_run)
    new_run: bool = False


@dataclass
class Timings:
    total_s: float = 0.0
    load_s: float = 0.0  # building the backend (model load), when this run triggered it
    method_s: float = 0.0  # inside Method.run (generation included)
    verify_s: float = 0.0  # inside the verifier (program execution), mostly in the background
    store_s: float = 0.0  # writing records and the manifest
    wait_s: float = 0.0  # generation waiting for verification and writes (their exposed part)
    hidden_s: float = 0.0  # verification and writes done while the next chunk generated


@dataclass
class RunResult:
    run_dir: Path
    manifest: RunManifest
    records: list[ProblemRecord]  # the records of the problems asked for, in dataset order
    new: int  # problems computed by this invocation
    stats: CacheStats
    timings: Timings

    @property
    def summary(self) -> dict[str, Any]:
        return summarize(self.records, self.manifest.k)


class Reporter(Protocol):
    """Hears about progress: a run starting, generations finishing (n at a time: `generated`
    is the `cppo_bench.util.progress.ProgressFn` backends call), a generation stage ending
    (throughput so far), a chunk's records stored."""

    def start(self, run_dir: Path, total: int, done: list[ProblemRecord]) -> None: ...
    def generated(self, n: int) -> None: ...
    def stage_done(self, stats: CacheStats) -> None: ...
    def chunk_done(self, records: list[ProblemRecord], stats: CacheStats) -> None: ...


class NullReporter:
    def start(self, run_dir: Path, total: int, done: list[ProblemRecord]) -> None:
        pass

    def generated(self, n: int) -> None:
        pass

    def stage_done(self, stats: CacheStats) -> None:
        pass

    def chunk_done(self, records: list[ProblemRecord], stats: CacheStats) -> None:
        pass


def load_problems(
    bench: str, data: str | None, limit: int | None, options: Mapping[str, Any]
) -> LoadResult:
    """The benchmark's problems (cppo_bench.api.load_result: one definition for the API and
    the CLI): none usable, or an id twice, is a DataError."""
    from cppo_bench.benchmarks.load import load_result

    return load_result(bench, data, limit=limit, **dict(options))


def select(spec: EvalSpec, dataset: Sequence[Problem]) -> tuple[list[Problem], list[int]]:
    """The problems this invocation asks for, and their dataset positions: the `limit`
    prefix, then (sharded) the ones of shard I. A shard of a prefix is a prefix of a shard."""
    n = len(dataset) if spec.limit is None else min(spec.limit, len(dataset))
    picked = [
        (i, p)
        for i, p in enumerate(dataset[:n])
        if spec.shard is None or shard_of(p.problem_id, spec.shard[1]) == spec.shard[0]
    ]
    return [p for _, p in picked], [i for i, _ in picked]


def build_manifest(
    spec: EvalSpec, method: Method, dataset: Sequence[Problem], data_source: str
) -> RunManifest:
    problems, positions = select(spec, dataset)
    ids = [p.problem_id for p in problems]
    s = spec.sampling
    return RunManifest(
        method=spec.method,
        bench=spec.bench,
        model=spec.model,
        backend=spec.backend,
        k=spec.k,
        seed=spec.seed,
        sampling={"temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens},
        method_options=method.options_dict(),
        data_source=data_source,
        problem_ids=ids,
        problem_ids_hash=ids_hash(ids),
        package_version=__version__,
        git_commit=git_commit(),
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        extra={
            "chunk_size": spec.chunk_size,
            **spec.tags,
            "identity": {**run_identity(dataset), **model_identity(spec.model)},
            "tests": summarize_tests(dataset),
        },  # fmt: skip
        dataset_hash=ids_hash([p.problem_id for p in dataset]),
        dataset_size=len(dataset),
        selected=len(dataset) if spec.limit is None else min(spec.limit, len(dataset)),
        shard=None
        if spec.shard is None
        else {"index": spec.shard[0], "count": spec.shard[1], "positions": positions},
        passk=dict(
            zip(
                ("estimator", "select"), type(method).passk_rule(method.options_dict()), strict=True
            )
        ),
    )


def execute(
    spec: EvalSpec,
    problems: Sequence[Problem],
    backend: Backend,
    out: Path,
    *,
    data_source: str = "",
    reporter: Reporter | None = None,
    lock_wait: float = 0.0,
) -> RunResult:
    """Run (or resume, or extend) one seed of one configuration over `problems`, the whole
    dataset, of which `spec.limit` and `spec.shard` select the problems to compute. The
    run's lock is held throughout (waiting up to `lock_wait` seconds for another holder)."""
    start = time.perf_counter()
    method = METHODS.get(spec.method).from_options(spec.method_options)
    if spec.chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {spec.chunk_size}")
    manifest = build_manifest(spec, method, problems, data_source)
    by_id = {p.problem_id: p for p in problems}
    wanted = [by_id[i] for i in manifest.problem_ids]
    method.check(wanted, spec.k)
    planned_dir = run_dir_for(Path(out), manifest)
    # the bench / method / model folders this call creates: taken back if it stores no run
    # (a model that fails to load leaves no empty model folder in the store)
    new_dirs = [d for d in (*reversed(planned_dir.parent.parents), planned_dir.parent)
                if d.is_relative_to(Path(out)) and not d.exists()]  # fmt: skip
    make_dirs(Path(out), planned_dir.parent)  # never through a link planted in the store
    try:
        with RunLock(planned_dir, lock_wait):
            check_under(Path(out), planned_dir)
            return _execute_locked(
                spec, manifest, method, wanted, by_id, backend, Path(out), reporter, start
            )
    except BaseException:
        for folder in reversed(new_dirs):
            try:
                os.rmdir(folder)  # only an empty folder goes: never one a run was stored in
            except OSError:
                break
        raise


def _execute_locked(
    spec: EvalSpec,
    manifest: RunManifest,
    method: Any,
    wanted: list[Problem],
    by_id: dict[str, Problem],
    backend: Backend,
    out: Path,
    reporter: Reporter | None,
    start: float,
) -> RunResult:
    reporter = reporter or NullReporter()
    adopt_legacy(Path(out), manifest)
    adopt_unidentified(Path(out), manifest)
    adopt_unfingerprinted(Path(out), manifest)
    planned_dir = run_dir_for(Path(out), manifest)
    check_new_run(Path(out), manifest, planned_dir, new_run=spec.new_run, note=_note)
    skipped: list[str] = []  # bad stored records: recomputed, never counted
    done = read_records(planned_dir, warnings=skipped)  # a torn last line is skipped
    for line in skipped:
        warn(log, line)
    todo = [p for p in wanted if p.problem_id not in done]
    timings, loaded_before = Timings(), getattr(backend, "load_s", 0.0)
    if todo and hasattr(backend, "get") and not exists(planned_dir / GEN_CACHE):
        # a fresh run loads a lazy model now, so a model that fails to load leaves no run
        # dir; a resumed one loads it on the first cache miss (re-verifying never loads it)
        backend.get()
    if todo and exists(planned_dir / MANIFEST):
        stored = read_manifest(planned_dir)
        if stored.extra.get("model_id") is not None and hasattr(backend, "get"):
            backend.get()  # more to generate: the model it is served by must be the run's
        if getattr(backend, "loaded", True):
            check_served_model(planned_dir, stored, backend)
    run_dir, manifest = open_run(Path(out), manifest, by_id)
    if getattr(backend, "loaded", True) and todo:  # recorded now: a crash keeps it too
        manifest.extra["model_id"] = backend.model_id
        write_manifest(run_dir, manifest, root=out)
    reporter.start(
        run_dir, len(wanted), [done[p.problem_id] for p in wanted if p.problem_id in done]
    )
    cached = CachedBackend(backend, GenCache(run_dir / GEN_CACHE, root=out), model_id=spec.model)
    progress_backend = _ProgressBackend(cached, reporter)
    new = 0

    def score(chunk: list[Problem], outputs: list[Any]) -> tuple[list[ProblemRecord], float, float]:
        t0 = time.perf_counter()
        records = score_chunk(chunk, outputs, spec.k, spec.verify_workers)
        t1 = time.perf_counter()
        append_records(run_dir, records, root=out)
        return records, t1 - t0, time.perf_counter() - t1

    def collect(future: Future) -> None:
        nonlocal new
        t0 = time.perf_counter()
        records, verify_s, store_s = future.result()
        waited = time.perf_counter() - t0
        timings.wait_s += waited
        timings.hidden_s += max(0.0, verify_s + store_s - waited)
        timings.verify_s += verify_s
        timings.store_s += store_s
        new += len(records)
        done.update((r.problem_id, r) for r in records)
        reporter.chunk_done(records, cached.stats)

    from cppo_bench.verifier import keep_sandboxes  # (lazy: `cppo-bench report` never needs it)

    pending: Future | None = None
    # one set of sandboxes for the whole run, not one per chunk
    with keep_sandboxes(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="score") as pool:
        try:
            for lo in range(0, len(todo), spec.chunk_size):
                chunk = todo[lo : lo + spec.chunk_size]
                t0 = time.perf_counter()
                outputs = method.run(
                    chunk, progress_backend, k=spec.k, seed=spec.seed, sampling=spec.sampling
                )
                timings.method_s += time.perf_counter() - t0
                previous, pending = pending, None
                if previous is not None:
                    collect(previous)  # one chunk verifying at a time: records stay in order
                pending = pool.submit(score, chunk, outputs)
        finally:
            if pending is not None:  # also on an error: a generated chunk is still stored
                collect(pending)
    ordered = [done[p.problem_id] for p in wanted if p.problem_id in done]
    timings.total_s = time.perf_counter() - start
    timings.load_s = getattr(backend, "load_s", 0.0) - loaded_before
    # complete = every problem the run was ever asked for, not just this invocation's prefix
    finished = all(i in done for i in manifest.problem_ids)
    manifest.status = "complete" if finished else "running"
    if getattr(backend, "loaded", True):
        manifest.extra["model_id"] = backend.model_id
    manifest.extra["summary"] = summarize(
        [done[i] for i in manifest.problem_ids if i in done], spec.k
    )
    t0 = time.perf_counter()
    write_manifest(run_dir, manifest, root=out)
    timings.store_s += time.perf_counter() - t0
    return RunResult(run_dir, manifest, ordered, new, cached.stats, timings)


class _ProgressBackend:
    """Forwards generation progress (requests finished) to the reporter."""

    def __init__(self, inner: CachedBackend, reporter: Reporter) -> None:
        self.inner, self.reporter = inner, reporter
        self.name, self.model_id = inner.name, inner.model_id

    def generate(self, requests, progress=None):  # noqa: ANN001, ANN201 - the Backend protocol
        started = getattr(self.reporter, "stage_started", None)
        if started is not None and requests:  # which prompt this batch renders, and how many
            stages = Counter(getattr(r, "stage", "") or r.tag for r in requests)
            started(stages.most_common(1)[0][0], len(requests))
        results = self.inner.generate(requests, progress or self.reporter.generated)
        self.reporter.stage_done(self.inner.stats)
        return results

    def close(self) -> None:
        self.inner.close()
