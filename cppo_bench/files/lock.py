"""One process per run: a lock file beside the run directory.

`cppo-bench run` and `cppo-bench runs merge` take `<run dir>.lock` before they read or
write a run, so two invocations on one run never both do the work, and no invocation entry
of the manifest is lost. Run stores live on cluster file systems (NFS, Lustre) where
`flock`/`fcntl` locks may not hold across nodes, so the lock is a file created with
O_CREAT|O_EXCL (atomic on local file systems and on NFSv3+), naming the holder's host,
pid and process start time. The holder refreshes the file's mtime every HEARTBEAT_S.

A lock is stale, and is broken, when its holder ran on this host and that process is gone
(its pid is free, or now belongs to a process that started later), or when its mtime is
older than STALE_AFTER_S (a holder on another host that stopped refreshing it: crashed, or
its node died). Clocks of the hosts sharing a store must agree to within that margin.
A second process waits up to `wait_s` for the lock, then stops with one line naming
the holder and the lock file.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError, RunLockedError
from cppo_bench.files.fs import not_replaceable

HEARTBEAT_S = 30.0
STALE_AFTER_S = 600.0
POLL_S = 0.5
MAX_LOCK_BYTES = 4096


def lock_path(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    return run_dir.with_name(run_dir.name + ".lock")


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), which
    tells a live holder from a later process that reuses its pid; None off Linux."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


MAX_PID = 1 << 22  # Linux's pid_max ceiling: a larger pid names no process


def _alive(pid: int, started: str | None) -> bool:
    if (
        isinstance(pid, bool) or not 0 < pid <= MAX_PID
    ):  # 0, negative (a process group) or 2**64: no such process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    now = _start_time(pid)
    return started is None or now is None or now == started


def _read(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_LOCK_BYTES)
    except OSError:  # a folder there, an I/O error: nothing to read
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # "[[[[..." nests too deep
        return {}
    return doc if isinstance(doc, dict) else {}


def _describe(path: Path, holder: dict[str, Any] | None) -> str:
    holder = holder or {}
    who = f"host {holder.get('host', '?')!s:.100} pid {holder.get('pid', '?')!s:.20}"
    since = holder.get("since")
    return f"{who}" + (f" since {since!s:.40}" if since else "")


class RunLock:
    """Context manager holding `<run_dir>.lock` (see the module docstring)."""

    def __init__(self, run_dir: Path, wait_s: float = 0.0) -> None:
        self.run_dir = Path(run_dir)
        self.path = lock_path(run_dir)
        self.wait_s = wait_s
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._me = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "start": _start_time(os.getpid()),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    def _stale(self, holder: dict[str, Any] | None) -> bool:
        if holder is None:
            return False  # vanished between our open and read: retry
        pid, started = holder.get("pid"), holder.get("start")
        if holder.get("host") == self._me["host"] and type(pid) is int:
            if isinstance(started, str | None):  # what our own lock holds
                return not _alive(pid, started)
            # a hand-edited start (NaN, a number): a reused pid cannot be told, so a live
            # pid holds it only while the file is fresh
            return not _alive(pid, None) or self._age() > STALE_AFTER_S
        return self._age() > STALE_AFTER_S  # another host, or a pid that is no pid ("abc")

    def _age(self) -> float:
        try:
            return time.time() - os.lstat(self.path).st_mtime
        except OSError:
            return 0.0  # gone or unreadable: not judged stale (the next try looks again)

    def _break(self, holder: dict[str, Any] | None) -> None:
        """Remove a stale lock: rename it away first, so two processes breaking it at once
        cannot remove a fresh lock the other just made (the rename moves one file once)."""
        aside = self.path.with_name(f"{self.path.name}.stale.{os.getpid()}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return  # another process broke it first
        except OSError as exc:  # a read-only folder: retrying would spin for ever
            raise DataError(
                f"{self.path}: a stale lock ({_describe(self.path, holder)}) that cannot be "
                f"removed ({exc.strerror})"
            ) from None
        if _read(aside) != holder:  # someone else's fresh lock: put it back
            with contextlib.suppress(OSError):
                os.link(aside, self.path)
        with contextlib.suppress(OSError):
            os.unlink(aside)

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_s
        data = json.dumps(self._me).encode()
        while True:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except FileExistsError:
                why = not_replaceable(self.path)  # a device / FIFO there is never broken
                if why:
                    raise DataError(f"{self.path}: {why} (the run's lock file)") from None
                holder = _read(self.path)
                if self._stale(holder):
                    self._break(holder)
                    continue
                if time.monotonic() >= deadline:
                    raise RunLockedError(
                        f"{self.run_dir}: run in use by "
                        f"{_describe(self.path, holder)} (lock file {self.path}; pass "
                        "--lock-wait SECONDS to wait, or remove the file if that process is gone)"
                    ) from None
                time.sleep(POLL_S)
                continue
            except OSError as exc:  # read-only folder, no permission, disk full
                raise DataError(
                    f"{self.path}: cannot take the run's lock ({exc.strerror})"
                ) from None
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:  # disk full: no half-written lock is left behind
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                raise DataError(
                    f"{self.path}: cannot write the run's lock ({exc.strerror})"
                ) from None
            break
        self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="run-lock")
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                os.utime(self.path, follow_symlinks=False)

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if _read(self.path) == json.loads(json.dumps(self._me)):
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def run_locks(run_dirs: list[Path], wait_s: float = 0.0):  # noqa: ANN201 - a context manager
    """Hold the locks of several runs (taken in sorted order: two mergers never deadlock)."""
    with contextlib.ExitStack() as stack:
        for run_dir in sorted(set(map(Path, run_dirs))):
            stack.enter_context(RunLock(run_dir, wait_s))
        yield
