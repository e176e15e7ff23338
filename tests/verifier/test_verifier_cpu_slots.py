"""One test at a time per CPU (verifier/cpus.py CpuSlot, held in Sandbox.run_test).

Sandboxes are spread over the CPUs, but two batches (serve's lanes, two threads of one
caller, the ranks of a trainer) can place more sandboxes than there are CPUs; two tests on
one CPU stretch each other's wall time, and the wall-clock backstop then decides a program
near its limit by what ran beside it. Every test the verifier runs goes through
Sandbox.run_test, which holds its CPU (a per-CPU lock, machine-wide) while the test runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from cppo_bench.verifier import cpus
from cppo_bench.verifier.sandbox import Sandbox

ALLOWED = sorted(os.sched_getaffinity(0))
pinned_only = pytest.mark.skipif(
    os.environ.get("CPPO_SANDBOX") == "command", reason="containers: sandboxes are not bound"
)
SPEC = {"mode": "stdin", "prelude": "none", "time_s": 10, "wall_s": 30, "mem_bytes": 256 << 20,
        "out_bytes": 1 << 20, "fsize_bytes": 1 << 20, "scratch_bytes": 1 << 20}  # fmt: skip
# burns 0.3 s of CPU, printing when it started and ended (CLOCK_MONOTONIC is the host's)
BUSY = textwrap.dedent("""
    import time
    t0 = time.monotonic()
    c0 = time.process_time()
    while time.process_time() - c0 < 0.3:
        pass
    print(t0, time.monotonic())
""")


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cpus.json"
    monkeypatch.setattr(cpus, "registry_path", lambda: path)
    monkeypatch.delenv("CPPO_SANDBOX_PIN", raising=False)
    return path


def _run_together(boxes: list[Sandbox]) -> list[tuple[float, float]]:
    """One BUSY test on each sandbox, all sent at once; each test's (start, end)."""
    for box in boxes:
        box.start()
        assert box.load(SPEC, BUSY) is None
    go = threading.Barrier(len(boxes))
    spans: list[tuple[float, float]] = []

    def one(box: Sandbox) -> None:
        go.wait()
        out = box.run_test(b"", timeout=60).stdout.decode().split()
        spans.append((float(out[0]), float(out[1])))

    threads = [threading.Thread(target=one, args=(b,)) for b in boxes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(spans) == len(boxes)
    return sorted(spans)


def _disjoint(spans: list[tuple[float, float]]) -> bool:
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


@pinned_only
def test_two_sandboxes_on_one_cpu_take_turns(registry: Path, monkeypatch) -> None:
    # both placed on the same CPU, as a second batch's sandboxes are once every CPU has one
    monkeypatch.setattr(cpus, "process_cpus", lambda: ALLOWED[:1])
    boxes = [Sandbox(), Sandbox()]
    try:
        spans = _run_together(boxes)
        assert boxes[0].cpu == boxes[1].cpu == ALLOWED[0]
    finally:
        for box in boxes:
            box.close()
    assert _disjoint(spans), spans  # without the slot the two tests share the CPU


def test_unbound_sandboxes_take_the_process_slots(monkeypatch) -> None:
    # a sandbox bound to no CPU (CPPO_SANDBOX_PIN=0, containers) takes one of the process's
    # slots, one per CPU it may use: here one
    monkeypatch.setenv("CPPO_SANDBOX_PIN", "0")
    monkeypatch.setattr(cpus, "process_cpus", lambda: ALLOWED[:1])
    monkeypatch.setattr(cpus, "_SLOTS", None)
    boxes = [Sandbox(), Sandbox()]
    try:
        spans = _run_together(boxes)
        assert boxes[0].cpu is None and boxes[1].cpu is None
    finally:
        for box in boxes:
            box.close()
    assert _disjoint(spans), spans


HOLDER = """
import sys
from pathlib import Path
from cppo_bench.verifier import cpus
cpus.registry_path = lambda: Path({registry!r})
slot = cpus.CpuSlot()
slot.bind({cpu})
with slot.held():
    print("held", flush=True)
    sys.stdin.readline()
"""


@pinned_only
@pytest.mark.parametrize("ends", ["releases", "dies"])
def test_another_process_holding_the_cpu_makes_a_test_wait(
    registry: Path, monkeypatch, ends: str
) -> None:
    """Another process (a second `cppo-bench run`, another trainer rank) running a test on
    this CPU: ours starts when it is done, or when the holder dies (the kernel drops a dead
    process's lock: nothing to clean up)."""
    monkeypatch.setattr(cpus, "process_cpus", lambda: ALLOWED[:1])
    code = HOLDER.format(registry=str(registry), cpu=ALLOWED[0])
    box = Sandbox()
    holder: subprocess.Popen | None = None
    try:
        box.start()
        assert box.load(SPEC, "print(1)") is None  # (loading holds the CPU: before the holder)
        holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = threading.Event()
        out: list[bytes] = []

        def run() -> None:
            out.append(box.run_test(b"", timeout=60).stdout)
            done.set()

        t = threading.Thread(target=run)
        t.start()
        # a one-line program takes milliseconds; it must still be waiting for the CPU
        assert not done.wait(1.0), "a test ran on a CPU another process's test held"
        if ends == "releases":
            holder.communicate("\n", timeout=60)
        else:
            holder.kill()
            holder.wait(timeout=60)
        t.join(timeout=60)
        assert out == [b"1\n"]
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        box.close()


@pytest.mark.parametrize(("method", "frame"), [("run_test", '{"op": "test"}'),
                                               ("load", 'op="program"')])  # fmt: skip
def test_every_test_and_compile_goes_through_the_slot(method: str, frame: str) -> None:
    # the slot is held in Sandbox.run_test and Sandbox.load (a program's compile is its work
    # on the CPU too): nothing else may send a test or a program to a sandbox
    root = Path(__file__).resolve().parents[2] / "cppo_bench"
    senders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if frame in p.read_text(encoding="utf-8")
    ]
    assert senders == ["verifier/sandbox.py"], senders
    src = (root / "verifier" / "sandbox.py").read_text(encoding="utf-8")
    assert src.count(frame) == 1
    body = src.split(f"def {method}(", 1)[1].split("\n    def ", 1)[0]
    assert body.index("self._slot.held()") < body.index(frame)


# a program that leaves its sandbox's CPU runs its threads where other sandboxes' tests hold
# their turn: the filter refuses sched_setaffinity (os.sched_setaffinity, and a thread's own
# call, which is the same syscall); it prints `refused` only for that refusal
LEAVE_CPU = textwrap.dedent("""
    import errno, os, threading
    mine = os.sched_getaffinity(0)
    said = []
    def leave():
        try:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)) | {0})
            said.append(f"moved to {sorted(os.sched_getaffinity(0))}")
        except OSError as exc:
            said.append("refused" if exc.errno == errno.EPERM else f"error {exc.errno}")
    leave()
    t = threading.Thread(target=leave)
    t.start()
    t.join()
    kept = os.sched_getaffinity(0) == mine
    print(" ".join(said) if kept else f"left {sorted(mine)}: {said}")
""")


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="no filter here")
def test_a_program_cannot_leave_its_cpu(mode: str) -> None:
    from cppo_bench.problem import Problem
    from cppo_bench.problem import Test as Case
    from cppo_bench.verifier import VerifyJob, verify_batch

    problem = Problem("cpu", "leave", "", tests=(Case("", "refused refused\n"),) * 2,
                      checker="lcb", time_limit_s=5.0)  # fmt: skip
    (result,) = verify_batch([VerifyJob(problem, LEAVE_CPU)], workers=1, all_tests=True)
    assert (result.verdict, result.tests_passed) == ("AC", 2), result.detail


@pytest.mark.parametrize("planted", ["another user's file", "a fifo"])
def test_a_lock_file_we_do_not_own_is_never_waited_on(registry: Path, planted: str) -> None:
    # /dev/shm is shared: a file planted under our lock's name (another user's, which they
    # could hold forever; a FIFO) is not used: the sandbox falls back to its process's slots
    path = registry.with_name(f"cppo-bench-cpu{ALLOWED[0]}-{os.getuid()}.lock")
    if planted == "a fifo":
        os.mkfifo(path, 0o600)
    else:
        if os.geteuid() != 0:
            pytest.skip("making another user's file needs root")
        path.touch(mode=0o666)
        os.chmod(path, 0o666)
        os.chown(path, 65534, 65534)
    slot = cpus.CpuSlot()
    slot.bind(ALLOWED[0])
    try:
        assert slot._fd is None
        with slot.held():  # a process slot: taken at once
            pass
    finally:
        slot.close()


def test_a_placement_registry_we_do_not_own_is_never_waited_on(registry: Path) -> None:
    # the same for the placement registry: another user's file under its name, locked by
    # them for good, made every sandbox start wait forever; now the sandbox is simply unbound
    import fcntl

    if os.geteuid() != 0:
        pytest.skip("making another user's file needs root")
    registry.write_text("[]")
    os.chmod(registry, 0o666)
    os.chown(registry, 65534, 65534)
    got: list = []
    with open(registry, "r+") as theirs:
        fcntl.flock(theirs, fcntl.LOCK_EX)  # (a lock of another open file: ours would wait)
        t = threading.Thread(target=lambda: got.append(cpus.take()), daemon=True)
        t.start()
        t.join(timeout=60)  # (it returns at once; a regression fails here instead of hanging)
        assert got == [None], "a sandbox start waited on another user's registry lock"


def test_a_slot_closed_while_held_is_released_then_closed(registry: Path) -> None:
    # a sandbox killed mid-test (its slot closed) must not unlock through a descriptor number
    # the kernel may have handed to another slot meanwhile: the close waits for the release
    first = cpus.CpuSlot()
    first.bind(ALLOWED[0])
    fd = first._fd
    assert fd is not None
    lock = registry.with_name(f"cppo-bench-cpu{ALLOWED[0]}-{os.getuid()}.lock")

    def names_the_lock() -> bool:  # (the number may be reused at once by another thread)
        try:
            return os.readlink(f"/proc/self/fd/{fd}") == str(lock)
        except OSError:
            return False

    with first.held():
        first.close()
        assert names_the_lock()  # still open while held
    assert not names_the_lock()  # closed at the release
    second = cpus.CpuSlot()
    second.bind(ALLOWED[0])
    try:
        with second.held():  # the lock is free again
            pass
    finally:
        second.close()
