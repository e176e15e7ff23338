"""A test child kept for the next test of the same program (stdlib only, inside the sandbox).

Forking a child per test costs ~1-2 ms of page-table copying, copy-on-write faults and
teardown, more than a light competition test itself (the official evaluators run every test
of a program in one process). Where the sandbox can account a reused child as well as a
fresh one, the child that ran test j of a program waits for test j+1 instead of exiting:

- it is the init of its own pid namespace under the seccomp filter (no process creation):
  the whole test is one process, whose CPU clock the server reads at each test's start and
  end, and which it kills (its whole namespace) at any limit;
- its memory cgroup counts everything it holds, kernel memory and files included (a
  descriptor of an earlier test's output kept open included), with the peak reset per test;
- it is reused only when its program returned with no other thread alive (its own count,
  and the kernel's, read by the server) and no memory error; any other end (a signal, `os._exit`, a limit) ends the child, and the next test
  forks a fresh one.

What the next test of the same program inherits (module state, the scratch tmpfs, the
inputs it read) the program knew already, as in the official harnesses, which run all of a
program's tests in one process. Nothing crosses between programs: each program's first test
is forked from the zygote, with a fresh scratch tmpfs. The child's own code after its first
test runs in a process the program controlled: the server trusts nothing it says (a "done"
message ends the test; the CPU, memory and exit status it records are its own measurements).

Off with CPPO_SANDBOX_REUSE=0 (see launch.py): every test forks.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import time

from mounts import scratch_bytes

CTL_FD = 5  # the reused child's control socket (past the test's fds 0-4)
DONE = b"done"
TEST_FDS = ("input", "out", "err", "status")  # what each later test brings, in this order


# ---- in the child ---------------------------------------------------------------------------


def reusable(status: bytes, memory_error: bytes) -> bool:
    """May this child serve the next test? Only when the program left no thread behind (a
    running thread is waited for as at interpreter exit, and the child then ends) and did not
    run out of memory."""
    import sys

    if status == memory_error:
        return False
    threading = sys.modules.get("threading")
    if threading is None:
        return True
    return threading.active_count() == 1 and not getattr(threading, "_threading_atexits", ())


def next_test(call: bool) -> bytes:
    """Tell the server this test is over and wait for the next one's descriptors; put them
    on fds 0-3 (call mode: 0 and 1 stay /dev/null). Returns the raw input of a call-mode
    test (b"" for stdin). Exits when the server closes the socket or sends anything else."""
    try:  # (the program may have broken any of this: then this child just ends, its
        # test's status already written)
        ctl = socket.socket(fileno=CTL_FD)
        ctl.send(DONE)
        msg, fds, _, _ = socket.recv_fds(ctl, 64, len(TEST_FDS))
        ctl.detach()  # (the fd stays: the socket object is rebuilt per test)
    except BaseException:
        os._exit(0)
    if msg != b"test" or len(fds) != len(TEST_FDS):
        os._exit(0)
    in_fd, out_fd, err_fd, st_fd = fds
    raw = b""
    if call:
        size = os.fstat(in_fd).st_size
        raw = os.pread(in_fd, size, 0) if size else b""
    else:
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.dup2(st_fd, 3)
    for fd in fds:
        os.close(fd)
    return raw


# ---- in the server --------------------------------------------------------------------------


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (kB) and Threads of a process, from /proc (world-readable)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"VmRSS:", b"VmHWM:", b"Threads:")):
                    key, value = line.split(b":", 1)
                    out[key.decode()] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def scratch_state(fd: int | None) -> list | None:
    """What a test can change in its scratch tmpfs, read through the server's descriptor of
    it: free blocks and inodes, the root directory's metadata and xattr names."""
    if fd is None:
        return None
    try:
        fs, st = os.fstatvfs(fd), os.fstat(fd)
        return [fs.f_bfree, fs.f_ffree, st.st_mode, st.st_uid, st.st_gid, st.st_nlink,
                st.st_size, st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns, os.listxattr(fd)]  # fmt: skip
    except OSError:
        return None


class WarmChild:
    """The server's handle on a kept child: its pidfd, control socket, CPU clock, and what
    the accounting of its next test starts from (warm.py's docstring says why each)."""

    def __init__(self, pidfd: int, pid: int, ctl: socket.socket, scratch_fd: int | None,
                 cgroup, base: int, fresh: list | None) -> None:  # fmt: skip
        self.pidfd, self.pid = pidfd, pid
        self.ctl: socket.socket | None = ctl  # (None once the child is gone: done())
        # the kernel's clockid of the child's process CPU clock (CPUCLOCK_SCHED, all threads)
        self.clock = ((~pid) << 3) | 2
        # its scratch tmpfs (our own copy of the descriptor) and its state when fresh (the
        # zygote's, read before the fork): a test that changed it ends the child, and the
        # next test gets a fresh scratch from the zygote. No scratch to watch: never reused.
        self.scratch_fd = os.dup(scratch_fd) if scratch_fd is not None else None
        self.clean = fresh
        # the memory cgroup (procs.TestCgroup) and its usage before the child was forked
        self.cgroup, self.base = cgroup, base
        self.tests = 1  # tests begun in this child (the first came through the zygote)
        self.cpu0, self.rss0_kb, self.cg0 = 0.0, 0, base
        # its CPU when its last test was reported over: the next test's clock starts there,
        # so what it burns in between (a program that says "done" early and goes on) counts
        self.cpu_end: float | None = None

    def begin(self, fds: list[int], time_s: float) -> bool:
        """Hand it the next test (input, stdout, stderr, status) and note where its CPU and
        memory stand. Its CPU limit moves with it: SIGXCPU once this test has used time_s (the
        server's own measure decides the verdict). False: it cannot serve this test (gone,
        or its scratch is not fresh): end it and fork a fresh one."""
        self.tests += 1
        cpu0 = self.cpu_s()
        if self.ctl is None or cpu0 is None or self.clean is None:
            return False
        if scratch_state(self.scratch_fd) != self.clean:
            return False
        status = _proc_status(self.pid)
        if status.get("Threads") != 1:  # (threads the child's own count cannot see: _thread)
            return False
        try:
            self.cgroup.reset_peak()
            self.cg0 = self.cgroup.usage()
            if self.cpu_end is not None:
                cpu0 = min(cpu0, self.cpu_end)
            self.cpu0, self.rss0_kb = cpu0, status.get("VmRSS", 0)
            soft = int(cpu0 + time_s) + 1
            resource.prlimit(self.pid, resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
            socket.send_fds(self.ctl, [b"test"], fds)
            return True
        except OSError:
            return False

    def cpu_s(self) -> float | None:
        try:
            return time.clock_gettime(self.clock)
        except OSError:
            return None

    def done(self) -> bool:
        """Read the child's message: True when it says the test is over (anything else, or
        the socket closing, is not: the test then ends with the child, via the zygote)."""
        if self.ctl is None:
            return False
        try:
            done = self.ctl.recv(16) == DONE
        except OSError:
            done = False
        if not done:
            self.ctl.close()
            self.ctl = None
        return done

    def report(self, files_kb: int) -> dict:
        """The test's end as the zygote would report it, measured from here (it lives on)."""
        cpu = self.cpu_end = self.cpu_s()
        out = self._memory(self.cgroup.peak(), files_kb)
        return dict(out, exited=True, status=0, cpu_s=max(0.0, (cpu or 0.0) - self.cpu0))

    def died(self, final: dict, files_kb: int) -> dict:
        """The zygote's report of its end, for this test alone: its usage since the test
        began (the child's CPU and peak resident set cover its earlier tests too)."""
        if self.tests <= 1:
            return final  # (its only test: the zygote's report is exactly the test's)
        peak = self.base + (int(final.get("cgroup_kb", 0)) << 10)
        mem = self._memory(peak, files_kb)
        return dict(final, cpu_s=max(0.0, float(final["cpu_s"]) - self.cpu0), **mem)

    def _memory(self, peak: int, files_kb: int) -> dict:
        held = scratch_bytes(self.scratch_fd) if self.scratch_fd is not None else 0
        if self.tests <= 1:  # its own peak resident set, as wait4 would have said
            rss = _proc_status(self.pid).get("VmHWM", 0)
        else:  # resident at the start, plus what the cgroup saw it grow by (files aside)
            grown = max(0, peak - self.cg0 - held) >> 10
            rss = self.rss0_kb + max(0, grown - files_kb)
        return {"maxrss_kb": rss, "scratch_kb": held >> 10,
                "cgroup_kb": max(0, peak - self.base) >> 10}  # fmt: skip

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass

    def close(self) -> None:
        if self.ctl is not None:
            self.ctl.close()
        os.close(self.pidfd)
        if self.scratch_fd is not None:
            os.close(self.scratch_fd)
