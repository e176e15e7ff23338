"""Run orchestration: problems -> method -> verifier -> run store, chunk by chunk.

Problems are processed in chunks of `chunk_size`: the method sends each stage of a chunk to
the backend as one batch, the verifier runs the chunk's programs as one parallel batch, and
the chunk's records are appended in one write. A killed run loses at most the chunk in
flight, and even that chunk's finished generations are in the generation cache. Resuming
= the same command: problems already in records.jsonl are skipped, and the rest ask the
cache first with the very same per-request seeds.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import cppo_bench
from cppo_bench.backends.base import Backend, SamplingParams
from cppo_bench.gencache import GEN_CACHE, CachedBackend, CacheStats, GenCache
from cppo_bench.methods import METHODS, Method
from cppo_bench.problem import DataError, LoadResult, Problem
from cppo_bench.runstore import (
    MANIFEST,
    RECORDS,
    ProblemRecord,
    RunManifest,
    append_records,
    read_manifest,
    read_records,
    repair_tail,
    run_dir_for,
    write_manifest,
)
from cppo_bench.scoring import score_chunk, summarize


@dataclass(frozen=True)
class RunSpec:
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


@dataclass
class Timings:
    total_s: float = 0.0
    load_s: float = 0.0  # building the backend (model load), when this run triggered it
    method_s: float = 0.0  # inside Method.run (generation included)
    verify_s: float = 0.0  # inside the verifier (program execution)
    store_s: float = 0.0  # writing records


@dataclass
class RunResult:
    run_dir: Path
    manifest: RunManifest
    records: list[ProblemRecord]  # every record of the run, in problem order
    new: int  # problems computed by this invocation
    stats: CacheStats
    timings: Timings

    @property
    def summary(self) -> dict[str, Any]:
        return summarize(self.records, self.manifest.k)


class Reporter(Protocol):
    """Hears about progress: a run starting, generations finishing (n at a time), a
    generation stage ending (throughput so far), a chunk's records stored."""

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
    from cppo_bench.benchmarks import load_benchmark, require_problems

    result = require_problems(load_benchmark(bench, data, limit=limit, **dict(options)), bench)
    ids = [p.problem_id for p in result.problems]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"{result.source or bench}: problem id {dup!r} appears twice")
    return result


@functools.cache
def git_commit() -> str | None:
    """The commit of the checkout the package runs from, or None outside a git checkout."""
    root = Path(cppo_bench.__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def ids_hash(ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def build_manifest(
    spec: RunSpec, method: Method, problems: Sequence[Problem], data_source: str
) -> RunManifest:
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
        package_version=cppo_bench.__version__,
        git_commit=git_commit(),
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        extra={"chunk_size": spec.chunk_size, **spec.tags},
    )


def open_run(out: Path, manifest: RunManifest) -> tuple[Path, RunManifest]:
    """Create the run directory, or reopen it (keeping its creation time) to resume."""
    run_dir = run_dir_for(out, manifest)
    if (run_dir / MANIFEST).exists():
        old = read_manifest(run_dir)
        if old.problem_ids != manifest.problem_ids or old.config_hash() != manifest.config_hash():
            raise DataError(f"{run_dir / MANIFEST}: belongs to a different run configuration")
        # the original provenance stays; each resume is logged below it
        manifest = dataclasses.replace(
            manifest,
            created_at=old.created_at,
            git_commit=old.git_commit,
            package_version=old.package_version,
            extra={**old.extra, **manifest.extra},
        )
    manifest.extra["invocations"] = [
        *manifest.extra.get("invocations", []),
        {
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": git_commit(),
            "package_version": cppo_bench.__version__,
        },
    ]
    manifest.status = "running"
    write_manifest(run_dir, manifest)
    for name in (RECORDS, GEN_CACHE):
        repair_tail(run_dir / name)
    return run_dir, manifest


def execute(
    spec: RunSpec,
    problems: Sequence[Problem],
    backend: Backend,
    out: Path,
    *,
    data_source: str = "",
    reporter: Reporter | None = None,
) -> RunResult:
    """Run (or resume) one seed of one configuration to completion."""
    reporter = reporter or NullReporter()
    start = time.perf_counter()
    method = METHODS.get(spec.method).from_options(spec.method_options)
    method.check(problems, spec.k)
    if spec.chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {spec.chunk_size}")
    manifest = build_manifest(spec, method, problems, data_source)
    planned_dir = run_dir_for(Path(out), manifest)
    done = read_records(planned_dir)  # a torn last line is skipped
    todo = [p for p in problems if p.problem_id not in done]
    timings, loaded_before = Timings(), getattr(backend, "load_s", 0.0)
    if todo and hasattr(backend, "get") and not (planned_dir / GEN_CACHE).exists():
        # a fresh run loads a lazy model now, so a model that fails to load leaves no run
        # dir; a resumed one loads it on the first cache miss (re-verifying never loads it)
        backend.get()
    run_dir, manifest = open_run(Path(out), manifest)
    reporter.start(run_dir, len(problems), list(done.values()))
    cached = CachedBackend(backend, GenCache(run_dir / GEN_CACHE), model_id=spec.model)
    progress_backend = _ProgressBackend(cached, reporter)
    new = 0
    for lo in range(0, len(todo), spec.chunk_size):
        chunk = todo[lo : lo + spec.chunk_size]
        t0 = time.perf_counter()
        outputs = method.run(
            chunk, progress_backend, k=spec.k, seed=spec.seed, sampling=spec.sampling
        )
        t1 = time.perf_counter()
        records = score_chunk(chunk, outputs, spec.k, spec.verify_workers)
        t2 = time.perf_counter()
        append_records(run_dir, records)
        timings.method_s += t1 - t0
        timings.verify_s += t2 - t1
        timings.store_s += time.perf_counter() - t2
        new += len(records)
        done.update((r.problem_id, r) for r in records)
        reporter.chunk_done(records, cached.stats)
    ordered = [done[p.problem_id] for p in problems if p.problem_id in done]
    timings.total_s = time.perf_counter() - start
    timings.load_s = getattr(backend, "load_s", 0.0) - loaded_before
    manifest.status = "complete" if len(ordered) == len(problems) else "running"
    if getattr(backend, "loaded", True):
        manifest.extra["model_id"] = backend.model_id
    manifest.extra["summary"] = summarize(ordered, spec.k)
    write_manifest(run_dir, manifest)
    return RunResult(run_dir, manifest, ordered, new, cached.stats, timings)


class _ProgressBackend:
    """Forwards generation progress (requests finished) to the reporter."""

    def __init__(self, inner: CachedBackend, reporter: Reporter) -> None:
        self.inner, self.reporter = inner, reporter
        self.name, self.model_id = inner.name, inner.model_id

    def generate(self, requests, progress=None):  # noqa: ANN001, ANN201 - the Backend protocol
        results = self.inner.generate(requests, progress or self.reporter.generated)
        self.reporter.stage_done(self.inner.stats)
        return results

    def close(self) -> None:
        self.inner.close()
