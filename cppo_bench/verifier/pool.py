"""verify_batch: many programs in parallel, one sandbox per worker thread, verdicts cached.

Thread-safe: every call owns its worker threads and sandboxes; the shared state is the
process-wide sandbox mode (probed once, under a lock) and, inside a `keep_sandboxes()`
block, the idle sandboxes that later calls reuse.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.util.registry import UnknownNameError
from cppo_bench.util.termsafe import echo, quote
from cppo_bench.verifier.cache import VerdictCache, cache_key
from cppo_bench.verifier.compare import get_checker
from cppo_bench.verifier.extract import extract_code
from cppo_bench.verifier.held import Spool
from cppo_bench.verifier.records import Limits, VerifyJob, VerifyResult, empty_result
from cppo_bench.verifier.runner import Ran, execute, judge_ran, run_job
from cppo_bench.verifier.sandbox import (
    Sandbox,
    SandboxError,
    sandbox_mode,
    settings,
    take_probed,
)

# ---- sandboxes kept between calls ------------------------------------------------------------
# A run verifies chunk after chunk and a trainer step after step: starting a sandbox (bwrap, an
# interpreter, the zygote) costs ~0.1-0.2 s per worker per call. Inside `keep_sandboxes()` a
# worker hands its sandbox back instead of closing it, and the next call takes it. A sandbox is
# clean between programs (scratch wiped, every test forked from the pristine zygote), so this
# is the same isolation as two programs of one call.
_KEEP_LOCK = threading.Lock()
_KEEP_DEPTH = 0
_IDLE: dict[tuple, list[Sandbox]] = {}


@contextmanager
def keep_sandboxes() -> Iterator[None]:
    """Reuse sandboxes across the verify_batch calls made inside the block (from any thread);
    the idle ones are closed when the outermost block ends."""
    global _KEEP_DEPTH
    with _KEEP_LOCK:
        _KEEP_DEPTH += 1
    try:
        yield
    finally:
        idle: list[Sandbox] = []
        with _KEEP_LOCK:
            _KEEP_DEPTH -= 1
            if not _KEEP_DEPTH:
                idle = [b for boxes in _IDLE.values() for b in boxes]
                _IDLE.clear()
        for box in idle:
            box.close()


def _pool_key(nproc: int) -> tuple:
    """What a sandbox was started with: one is reused only for the same settings."""
    return settings(sandbox_mode(keep_probe=True), nproc)


def _take(key: tuple) -> Sandbox | None:
    with _KEEP_LOCK:
        boxes = _IDLE.get(key)
        return boxes.pop() if _KEEP_DEPTH and boxes else None


def _give_back(key: tuple, box: Sandbox) -> bool:
    """Keep a healthy sandbox for the next call; False: the caller closes it."""
    if box.proc is None or box.proc.poll() is not None:
        return False
    with _KEEP_LOCK:
        if not _KEEP_DEPTH:
            return False
        _IDLE.setdefault(key, []).append(box)
    return True


@dataclass(frozen=True)
class _Task:
    key: str
    problem: Problem
    code: str
    limits: Limits


def verify_batch(
    jobs: Iterable[VerifyJob],
    *,
    workers: int | None = None,
    all_tests: bool = False,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    limits: Limits | None = None,
) -> list[VerifyResult]:
    """Verify every job; results come back in the jobs' order.

    workers: parallel sandboxes (default, and at most: one per CPU this process may use;
    more would share CPUs, and a program's wall-clock backstop, so its verdict, would depend
    on the programs beside it: see ``sandbox_count``). all_tests: run every test
    instead of stopping at the first failure. cache_dir: verdict cache (identical jobs
    are never re-executed, within a call or across calls). limits: defaults that a
    problem's own time/memory limits override.
    """
    jobs = list(jobs)
    base = limits or Limits()
    validate_problems(job.problem for job in jobs)
    cache = VerdictCache(cache_dir) if cache_dir is not None else None
    results: list[VerifyResult | None] = [None] * len(jobs)
    groups: dict[str, list[int]] = {}  # identical jobs run once
    tasks: list[_Task] = []
    for i, job in enumerate(jobs):
        code = extract_code(job.code)
        if code is None:
            results[i] = empty_result(job.problem)
            continue
        lim = base.for_problem(job.problem)
        key = cache_key(code, job.problem, lim, all_tests)
        if key in groups:
            groups[key].append(i)
            continue
        groups[key] = [i]
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            results[i] = hit
        else:
            tasks.append(_Task(key, job.problem, code, lim))
    bar = _Bar(progress, len(jobs), sum(r is not None for r in results))
    try:
        for task, result, cacheable in _run_pool(tasks, workers, all_tests, base.nproc):
            for i in groups[task.key]:
                results[i] = result
            bar.advance(len(groups[task.key]))
            if cache is not None and cacheable:
                cache.put(task.key, result)
    finally:
        bar.close()
    for idxs in groups.values():  # duplicates of cache hits
        for i in idxs[1:]:
            results[i] = results[idxs[0]]
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:  # a bug, never a silently shorter list
        raise RuntimeError(f"verify_batch lost the results of jobs {missing[:10]}")
    return results  # type: ignore[return-value]


def validate_problems(problems: Iterable[Problem]) -> None:
    """Fail early, naming the record, on problems the verifier cannot judge."""
    seen: set[int] = set()
    for p in problems:
        if id(p) in seen:
            continue
        seen.add(id(p))
        if p.task != "codegen":
            raise DataError(f"{p.uid}: task {quote(p.task)} has no programs to verify")
        if not p.tests:
            raise DataError(f"{p.uid}: has no tests to verify against")
        if len(p.modes) > 1:
            raise DataError(f"{p.uid}: mixes stdin and call-based tests")
        try:
            get_checker(p.checker)
        except UnknownNameError as exc:
            raise DataError(f"{p.uid}: {exc}") from None
        for i, t in enumerate(p.tests):
            if t.mode == "call":
                try:
                    json.loads(t.input), json.loads(t.output)
                except ValueError as exc:
                    raise DataError(f"{p.uid}: test {i} is not JSON ({exc})") from None


def _run_pool(tasks: list[_Task], workers: int | None, all_tests: bool, nproc: int):
    """Yield (task, result, cacheable) as they are judged. Early stop: as workers finish
    them (each test judged before the next, in its worker). `all_tests`: only once every
    task has run, so that no program of the call runs while any is judged: no verdict, and
    no judging time, shows in anything a program of the call can time (its tests' starts,
    the next program's start, its scratch's times, another worker's hand-overs, which
    share this process's GIL)."""
    if not tasks:
        return
    if not all_tests:
        yield from _execute_pool(tasks, workers, nproc, None)
        return
    spool = Spool()
    try:
        ran = list(_execute_pool(tasks, workers, nproc, spool))  # every test of every task
        for task, outcome, cacheable in ran:
            yield task, judge_ran(outcome) if isinstance(outcome, Ran) else outcome, cacheable
    finally:
        spool.close()


_clamped_once: set[int] = set()  # worker counts already said to be cut, in this process


def sandbox_count(workers: int | None, tasks: int) -> int:
    """Sandboxes for a batch: ``workers`` (default: every CPU this process may use), never
    more than those CPUs or the tasks. A test's time limit is CPU time with a wall-clock
    backstop (Limits.wall_s); sandboxes sharing CPUs stretch each other's wall time, so a
    program near its limit would fail or pass by what ran beside it (and --workers 100000
    would start 100000 sandboxes). Said once per process on stderr when a request is cut."""
    from cppo_bench.verifier.cpus import process_cpus

    cpus = len(process_cpus()) or os.cpu_count() or 1
    if workers and workers > cpus and workers not in _clamped_once:
        _clamped_once.add(workers)
        echo(
            f"verifier: {workers} workers asked, {cpus} used: one sandbox per CPU this process "
            "may use, so no program's wall time depends on another's",
            err=True,
        )
    return max(1, min(workers or cpus, cpus, tasks))


def _execute_pool(tasks: list[_Task], workers: int | None, nproc: int, spool: Spool | None):
    """Yield (task, VerifyResult or Ran, cacheable) as workers finish them."""
    n = sandbox_count(workers, len(tasks))
    todo: queue.SimpleQueue[_Task] = queue.SimpleQueue()
    for task in sorted(tasks, key=lambda t: -len(t.problem.tests)):  # long jobs first
        todo.put(task)
    done: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    key = _pool_key(nproc)

    def work() -> None:
        box = _take(key) or take_probed(key) or Sandbox(nproc=nproc)
        healthy = True
        try:
            while not stop.is_set():
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
                done.put(("ok", task, *_run_one(box, task, spool)))
        except BaseException as exc:  # e.g. no sandbox can start: fail the whole batch
            healthy = False
            stop.set()
            done.put(("error", exc, None, None))
        finally:
            if not (healthy and _give_back(key, box)):
                box.close()

    threads = [threading.Thread(target=work, daemon=True, name=f"verify-{i}") for i in range(n)]
    for t in threads:
        t.start()
    try:
        for _ in range(len(tasks)):
            kind, task, result, cacheable = done.get()
            if kind == "error":
                raise task
            yield task, result, cacheable
    finally:
        stop.set()
        for t in threads:
            t.join()


def _run_one(box: Sandbox, task: _Task, spool: Spool | None) -> tuple[VerifyResult | Ran, bool]:
    """One job, with one retry on a fresh sandbox if the sandbox itself fails mid-job. With
    a spool (`all_tests`): every test run and held, none judged (a Ran); without: judged,
    stopping at the first failure."""
    failure = None
    for _ in range(2):
        if box.proc is None:
            box.start()
        if box.cpu is not None:
            # this worker thread (made for this batch) joins its sandbox's CPU: all of a
            # test's hand-overs stay on one CPU (see cpus.py)
            try:
                os.sched_setaffinity(0, {box.cpu})
            except OSError:
                pass
        try:
            if spool is not None:
                return execute(box, task.problem, task.code, task.limits, spool), True
            return run_job(box, task.problem, task.code, task.limits, False), True
        except SandboxError as exc:
            failure = exc
            box.kill()
        except Exception as exc:  # noqa: BLE001  judging this program failed: its verdict
            box.kill()  # only, never the batch's (and the sandbox is not trusted after it)
            tests = len(task.problem.tests)
            detail = f"could not be judged: {type(exc).__name__}: {str(exc)[:200]}"
            return VerifyResult("RE", False, 0, tests, 0, 0.0, None, detail, task.code,
                                sandbox=box.label), False  # fmt: skip
    tests = len(task.problem.tests)
    result = VerifyResult("RE", False, 0, tests, 0, 0.0, None, f"sandbox failure: {failure}",
                          task.code, sandbox=box.label)  # fmt: skip
    return result, False  # not cached: the sandbox, not the program, may be at fault


class _Bar:
    """The one progress bar (`cppo_bench.util.progress.progress_bar`: plain lines without a
    terminal) when asked for; a no-op otherwise."""

    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self._cm = self._bar = None
        if enabled and total:
            from cppo_bench.util.progress import progress_bar

            # stderr: standard output may be carrying the results (cppo-bench verify)
            self._cm = progress_bar("verifying", total, completed=done)
            self._bar = self._cm.__enter__()

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar(n)

    def close(self) -> None:
        if self._cm is not None:
            cm, self._cm = self._cm, None
            cm.__exit__(None, None, None)
