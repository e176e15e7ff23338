"""Binding each sandbox to the least used CPU, counted across processes (verifier/cpus.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cppo_bench.verifier import cpus
from cppo_bench.verifier.sandbox import Sandbox

ALLOWED = sorted(os.sched_getaffinity(0))
two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs at least 2 CPUs to tell apart")


@pytest.fixture
def registry(tmp_path, monkeypatch):
    path = tmp_path / "cpus.json"
    monkeypatch.setattr(cpus, "registry_path", lambda: path)
    monkeypatch.delenv("CPPO_SANDBOX_PIN", raising=False)
    return path


def _take() -> tuple[int, int]:
    got = cpus.take()
    assert got is not None, "pinning is off or impossible here"
    return got


@two_cpus
def test_sandboxes_spread_over_cpus_and_give_them_back(registry) -> None:
    first, second = _take(), _take()
    assert first[0] != second[0]
    cpus.give_back(first)
    third = _take()
    assert third[0] == first[0]  # the freed CPU is the least used again
    cpus.give_back(second)
    cpus.give_back(third)
    assert json.loads(registry.read_text()) == []


@two_cpus
def test_another_process_sandboxes_count(registry) -> None:
    """Two processes (e.g. the ranks of a trainer) must not both start on the same CPU."""
    holder = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from cppo_bench.verifier import cpus
        cpus.registry_path = lambda: Path({str(registry)!r})
        print(cpus.take()[0], flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        theirs = int(proc.stdout.readline())
        ours = _take()
        assert ours[0] != theirs
        cpus.give_back(ours)
    finally:
        proc.communicate("")
    # the holder died without giving its CPU back: its entry is dropped at the next look
    again = _take()
    assert again[0] == ALLOWED[0]
    cpus.give_back(again)


def test_a_bound_thread_still_chooses_among_all_cpus(registry) -> None:
    """A batch worker thread bound to one CPU restarts its sandbox: the choice is still
    made over every CPU the process may use."""
    import threading

    seen = []

    def bound() -> None:
        os.sched_setaffinity(0, {ALLOWED[0]})
        seen.append(cpus.process_cpus())

    t = threading.Thread(target=bound)
    t.start()
    t.join()
    assert seen == [ALLOWED]


def test_a_corrupt_registry_or_pinning_off(registry, monkeypatch) -> None:
    for junk in ("{not json", '[[0, "1", 2], [0, -1, 3], [0], "x", [0, 1, 2, 3]]', "{}", "5"):
        registry.write_text(junk)
        placed = cpus.take()
        assert placed is not None and placed[0] == ALLOWED[0], junk  # junk counts for none
        cpus.give_back(placed)
    monkeypatch.setenv("CPPO_SANDBOX_PIN", "0")
    assert cpus.take() is None


@two_cpus
@pytest.mark.skipif(os.environ.get("CPPO_SANDBOX") == "command", reason="containers: not bound")
def test_a_sandbox_and_its_programs_run_on_its_cpu(registry) -> None:
    spec = {"mode": "stdin", "prelude": "none", "time_s": 5, "wall_s": 10,
            "mem_bytes": 256 << 20, "out_bytes": 1 << 20, "fsize_bytes": 1 << 20,
            "scratch_bytes": 1 << 20}  # fmt: skip
    boxes = [Sandbox(), Sandbox()]
    seen = []
    try:
        for box in boxes:
            box.start()
            assert box.load(spec, "import os\nprint(sorted(os.sched_getaffinity(0)))") is None
            seen.append(box.run_test(b"", timeout=20).stdout.decode().strip())
        placed = [box.cpu for box in boxes]
    finally:
        for box in boxes:
            box.close()
    assert seen == [f"[{cpu}]" for cpu in placed] and placed[0] != placed[1]
    assert json.loads(registry.read_text()) == []


def test_the_callers_thread_stays_free() -> None:
    """Only the batch's own worker threads join their sandboxes' CPUs, never the caller's
    (a trainer's main thread, and every thread it starts later, would be stuck on one)."""
    from cppo_bench.problem import Problem
    from cppo_bench.problem import Test as Case
    from cppo_bench.verifier import VerifyJob, verify_batch

    before = os.sched_getaffinity(0)
    problem = Problem("t", "p", "", tests=(Case("1\n", "1\n"),), checker="lcb")
    results = verify_batch([VerifyJob(problem, "print(input())")] * 3, workers=2)
    assert [r.verdict for r in results] == ["AC"] * 3
    assert os.sched_getaffinity(0) == before


def test_no_batch_runs_more_sandboxes_than_cpus(monkeypatch, capsys) -> None:
    # a sandbox sharing a CPU stretches its neighbours' wall time, and the wall-clock
    # backstop then flips verdicts near the limit: every batch (run, serve lanes, trainer
    # rewards) sizes its pool through sandbox_count, which never passes the process's CPUs
    from cppo_bench.benchmarks import load_benchmark
    from cppo_bench.verifier import VerifyJob, pool, verify_batch

    monkeypatch.setattr(pool, "_clamped_once", set())  # what this process has said so far
    n = len(cpus.process_cpus())
    assert pool.sandbox_count(None, 10**6) == n
    assert pool.sandbox_count(100_000, 10**6) == n
    assert pool.sandbox_count(100_000, 1) == 1
    assert pool.sandbox_count(1, 10**6) == 1
    said = capsys.readouterr().err
    assert said.count("100000 workers asked") == 1 and f"{n} used" in said  # once a process
    started: list[int] = []
    real = pool.sandbox_count

    def counted(workers: int | None, tasks: int) -> int:
        started.append(real(workers, tasks))
        return started[-1]

    monkeypatch.setattr(pool, "sandbox_count", counted)
    probs = load_benchmark("demo").problems[: n + 2]
    results = verify_batch([VerifyJob(p, p.reference_solutions[0]) for p in probs], workers=64)
    assert all(r.passed for r in results) and started == [n]


def test_augments_sandboxes_are_sized_by_the_same_door(monkeypatch) -> None:
    # the other place that starts sandboxes (cppo-bench augment's reference runs) takes its
    # count from sandbox_count too: --workers 64 on 3 jobs starts min(CPUs, 3), not 64
    from cppo_bench.augment import execute
    from cppo_bench.benchmarks import load_benchmark
    from cppo_bench.verifier import pool

    asked: list[tuple[int | None, int]] = []

    def counted(workers: int | None, tasks: int) -> int:
        asked.append((workers, tasks))
        return pool.sandbox_count(workers, tasks)

    monkeypatch.setattr(execute, "sandbox_count", counted)
    started: list[int] = []
    real = execute.Sandbox

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            started.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(execute, "Sandbox", Counted)
    probs = load_benchmark("demo").problems[:3]
    jobs = [execute.ExecJob(p, p.reference_solutions[0], (p.tests[0].input,)) for p in probs]
    out = execute.run_batch(jobs, workers=64)
    assert [o[0].ok for o in out] == [True] * 3
    assert asked == [(64, 3)] and len(started) == min(len(cpus.process_cpus()), 3)
