"""Which CPU each sandbox's processes run on (the host side; harness.py binds itself).

A test passes through four processes of one sandbox in turn, one at a time: the verifier's
worker thread (pool.py binds it too), the server, the zygote and the test child. Bound to
one CPU, each hand-over is a same-CPU wake-up (no inter-processor interrupt) and the
child's copy-on-write copies find the zygote's pages in a warm cache: on the 17-tests-per-program workload of
benchmarks/verifier_throughput.py that is ~30 % more tests per second than letting the
processes spread. Each sandbox takes the least used CPU this process may run on, counted
over every live sandbox of this user on the machine (a file under /dev/shm, locked), so
that e.g. the ranks of a multi-process trainer do not all pile onto CPU 0.
CPPO_SANDBOX_PIN=0 turns it off.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from cppo_bench.util import env
from cppo_bench.verifier.launch import PIN_ENV

_LOCK = threading.Lock()  # flock is per open file: threads of this process serialise here


def registry_path() -> Path:
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    return base / f"cppo-bench-cpus-{os.getuid()}.json"


def process_cpus() -> list[int]:
    """The CPUs this process may run on: its main thread's set (a batch worker thread bound
    to one CPU must not narrow the choice for the sandboxes it restarts)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    out: list[int] = []
                    for part in line.split(":", 1)[1].strip().split(","):
                        lo, _, hi = part.partition("-")
                        out += range(int(lo), int(hi or lo) + 1)
                    if out:
                        return out
    except (OSError, ValueError):
        pass
    return sorted(os.sched_getaffinity(0))


def _valid(entry: object) -> bool:
    """[cpu, pid, token], all ints, pid > 0 (anything else is dropped)."""
    return (isinstance(entry, list) and len(entry) == 3
            and all(type(x) is int for x in entry) and entry[1] > 0)  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _own_file(path: Path) -> int | None:
    """An open descriptor of this user's regular file at ``path`` (made if absent), or None.
    /dev/shm is shared by every user: no link is followed, and a file planted under our name
    (another user's, which they could lock forever; a FIFO) is not used."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid == os.getuid() and stat.S_ISREG(st.st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


R = TypeVar("R")


def _update(change: Callable[[list], R]) -> R | None:
    """Run change(entries) -> result under the registry's lock; entries ([cpu, pid, token]
    lists) of dead processes are dropped first. None where the registry is unusable."""
    path = registry_path()
    with _LOCK:
        fd = _own_file(path)
        if fd is None:
            return None
        with os.fdopen(fd, "r+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    entries = json.loads(f.read() or "[]")
                except ValueError:
                    entries = []  # a torn or foreign file: start afresh
                if not isinstance(entries, list):
                    entries = []
                entries = [e for e in entries if _valid(e) and _alive(e[1])]
                result = change(entries)
                f.seek(0)
                f.truncate()
                f.write(json.dumps(entries))
                return result
            except (OSError, TypeError, ValueError):
                return None


def take() -> tuple[int, int] | None:
    """(cpu, token) for a starting sandbox: the least used CPU this process may run on;
    None when pinning is off or not possible."""
    if not env.flag(PIN_ENV, True) or not hasattr(os, "sched_getaffinity"):
        return None
    allowed = process_cpus()
    token = int.from_bytes(os.urandom(6), "big")

    def pick(entries: list) -> tuple[int, int]:
        load = {cpu: 0 for cpu in allowed}
        for cpu, _, _ in entries:
            if cpu in load:
                load[cpu] += 1
        cpu = min(allowed, key=lambda c: (load[c], c))
        entries.append([cpu, os.getpid(), token])
        return cpu, token

    return _update(pick)


def give_back(placed: tuple[int, int] | None) -> None:
    """The sandbox placed by take() has stopped."""
    if placed is None:
        return

    def drop(entries: list) -> None:
        entries[:] = [e for e in entries if e[2] != placed[1]]

    _update(drop)


# ---- one test at a time per CPU ---------------------------------------------------------------
# A test's time limit is CPU time with a wall-clock backstop (Limits.wall_s); two tests sharing
# one CPU stretch each other's wall time, so a program near its limit would fail or pass by what
# ran beside it. Placement above only spreads sandboxes; it cannot stop two verifier batches
# (serve's lanes, two threads of one caller, the ranks of a trainer) from placing more
# sandboxes than there are CPUs. So every test runs holding its CPU: an exclusive lock on a
# per-CPU file (flock: machine-wide, per open file so also between threads, released by the
# kernel when a holder dies), or, for a sandbox bound to no CPU, one of this process's slots
# (one per CPU it may use).

_SLOTS: threading.BoundedSemaphore | None = None


def _process_slots() -> threading.BoundedSemaphore:
    global _SLOTS
    with _LOCK:
        if _SLOTS is None:
            _SLOTS = threading.BoundedSemaphore(max(1, len(process_cpus())))
        return _SLOTS


class CpuSlot:
    """One sandbox's right to run a test (see above); ``bind`` follows the sandbox's CPU."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._held: int | None = None  # the descriptor a test holds now: a close() meanwhile
        # leaves it to the release (an fd number reused under our unlock would free another
        # slot's lock)

    def bind(self, cpu: int | None) -> None:
        self.close()
        if cpu is None:
            return
        path = registry_path().with_name(f"cppo-bench-cpu{cpu}-{os.getuid()}.lock")
        self._fd = _own_file(path)  # None: the process's slots still bound this process

    @contextmanager
    def held(self) -> Iterator[None]:
        fd = self._fd
        if fd is None:
            with _process_slots():
                yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._held = fd
        try:
            yield
        finally:
            self._held = None
            fcntl.flock(fd, fcntl.LOCK_UN)
            if self._fd != fd:  # closed (or rebound) while held
                os.close(fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and fd != self._held:
            os.close(fd)
