"""Processes and streams, for the server inside the sandbox (stdlib only): killing and
measuring a test's process tree, wiping scratch, reading the child's pipes and files, and
the fallback mode's root supervisor."""

from __future__ import annotations

import os
import signal

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


class Tree:
    """CPU and memory summed over a test's whole process tree (rlimits are per process)."""

    def __init__(self, pid: int, prog: dict, scratch_fd: int | None = None,
                 files: tuple[int, ...] = ()) -> None:  # fmt: skip
        self.pid, self.cpu_s, self.peak_kb = pid, 0.0, 0
        self.time_s, self.mem_bytes = prog["time_s"], prog["mem_bytes"]
        self.scratch_fd = scratch_fd  # the test's scratch tmpfs: its pages count as memory
        self.files = files  # the test's output files (memfds): their sizes count too
        self.cgroup: tuple[TestCgroup, int] | None = None  # (its memory cgroup, the base)
        self.cpu_base = 0.0  # a reused child's CPU before this test (warm.py)
        # resident pages the zygote preloaded (numpy's), not the program's (serversetup)
        self.preloaded = int(prog.get("preloaded_kb", 0)) << 10

    def close(self) -> None:
        if self.scratch_fd is not None:
            os.close(self.scratch_fd)
            self.scratch_fd = None

    def measure(self) -> str | None:
        cpu, mem = 0, files_bytes(self.files) - self.preloaded
        if self.scratch_fd is not None:
            st = os.fstatvfs(self.scratch_fd)
            mem += (st.f_blocks - st.f_bfree) * st.f_frsize
        for p in [self.pid, *descendants(self.pid)]:
            try:
                with open(f"/proc/{p}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                cpu += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
                mem += _pss(p, int(fields[21]) * PAGE)
            except (OSError, ValueError, IndexError):
                continue
        if self.cgroup is not None:  # what the kernel charged to the test, at its peak
            try:
                mem = max(mem, self.cgroup[0].peak() - self.cgroup[1])
            except (OSError, ValueError):
                pass
        self.cpu_s = max(self.cpu_s, cpu / CLK_TCK - self.cpu_base)
        self.peak_kb = max(self.peak_kb, mem >> 10)
        if self.cpu_s > self.time_s:
            return "cpu"
        return "mem" if mem > self.mem_bytes else None


class TestCgroup:
    """The test's memory cgroup (launch.MemCgroup), through the descriptors the verifier
    opened on the host: the zygote stands in it only while it forks a test child, so that
    the child, and all it makes, is charged there, kernel memory included. None of these
    descriptors reaches a program (a test child closes every fd past 4)."""

    SLACK = 32 << 20  # the limit sits this far above the test's: past its own limit, MLE

    def __init__(self, fds: dict) -> None:
        self.fds = {k: int(v) for k, v in fds.items()}

    def enter(self, mem_bytes: int) -> int:
        """Into the test group, with its peak reset and its limit set; the bytes it holds
        already (page cache an earlier test read): the base the test's own are above."""
        os.write(self.fds["test"], b"0")
        base = self._read("usage")
        os.write(self.fds["limit"], b"%d" % (base + mem_bytes + self.SLACK))
        os.write(self.fds["peak"], b"0")  # v1: to the usage now; v2 (6.12+): from now on
        return base

    def leave(self) -> None:
        os.write(self.fds["main"], b"0")

    def reset_peak(self) -> None:
        """The peak from now on (v1: to the usage now), for the next test of a reused child."""
        os.write(self.fds["peak"], b"0")

    def peak(self) -> int:
        return self._read("peak")

    def usage(self) -> int:
        return self._read("usage")

    def _read(self, key: str) -> int:
        raw = os.pread(self.fds[key], 64, 0).strip()
        return int(raw) if raw.isdigit() else 0


def open_cgroup(fds: dict | None) -> TestCgroup | None:
    """The TestCgroup of the init message, if it works here (else None: not counted so)."""
    if not fds:
        return None
    try:
        cg = TestCgroup(fds)
        cg.enter(1 << 30)
        cg.leave()
        return cg
    except (OSError, ValueError, KeyError):
        return None


def files_bytes(fds: tuple[int, ...]) -> int:
    """The sizes of the test's output files (memfds the judge made: tmpfs pages that no
    rlimit counts; sealed against shrinking, so a size never hides an earlier peak)."""
    total = 0
    for fd in fds:
        try:
            total += os.fstat(fd).st_size
        except OSError:
            pass
    return total


def _pss(pid: int, rss: int) -> int:
    """Proportional set size (shared pages split between the processes sharing them)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return rss


def kill(pid: int) -> None:
    for fn, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            fn(target, signal.SIGKILL)
        except OSError:
            pass


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def wipe(path: str) -> None:
    """Remove everything under `path` (kept itself), whatever modes the program set."""
    import shutil  # (by the server only: the zygote, and so every test child, never holds it)

    for root, dirs, _ in os.walk(path):  # first make every directory enterable
        for d in dirs:
            full = os.path.join(root, d)
            if not os.path.islink(full):
                try:
                    os.chmod(full, 0o700)
                except OSError:
                    pass
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            try:
                os.unlink(full)
            except OSError:
                pass


class Stream:
    """One pipe from the test child. `cap` None = keep only the tail (stderr)."""

    def __init__(self, fd: int, cap: int | None) -> None:
        self.fd, self.cap, self.buf, self.open = fd, cap, bytearray(), True
        os.set_blocking(fd, False)

    def drain(self) -> bool:
        """Read what is buffered, never waiting for an EOF that a writer parked in a unix
        socket may never send; then close. True when the cap was exceeded."""
        truncated = False
        while self.open:
            try:
                truncated = self.pump(wait=False) or truncated
            except BlockingIOError:
                break
        self.close()
        return truncated

    def pump(self, wait: bool = True) -> bool:
        """Read once; True when the cap was exceeded (the program is then stopped)."""
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            if not wait:
                raise
            return False
        if not chunk:
            self.close()
            return False
        self.buf += chunk
        if self.cap is None:
            if len(self.buf) > 1 << 16:
                del self.buf[: len(self.buf) - 4096]
            return False
        if len(self.buf) > self.cap:
            del self.buf[self.cap :]
            self.close()
            return True
        return False

    def close(self) -> None:
        if self.open:
            os.close(self.fd)
            self.open = False


def read_capped(fd: int, cap: int) -> tuple[bytes, bool]:
    """(at most `cap` bytes from the start of a file the test wrote, whether it held more),
    then close it. Its size is the program's to choose, so we never read past `cap`."""
    try:
        size = os.fstat(fd).st_size
        want = min(size, cap)
        parts, got = [], 0
        while got < want:
            chunk = os.pread(fd, min(want - got, 1 << 24), got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts), size > cap
    finally:
        os.close(fd)


def pid_of(pidfd: int) -> int:
    """The pid, in our namespace, of the process a pidfd refers to."""
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        for line in f:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    raise RuntimeError("no Pid in pidfd fdinfo")


def supervise() -> None:
    """Fallback mode as root: stay root (unkillable by the nobody-uid programs) as a subreaper
    and, when the server dies however it dies, kill and reap everything it left."""
    import nsutil  # (a sibling inside the sandbox; the host imports this module too)

    nsutil.prctl(nsutil.PR_SET_CHILD_SUBREAPER, 1)
    server = os.fork()
    if server == 0:
        return
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    code = 0
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == server:
            code = os.waitstatus_to_exitcode(status)
            break
    while descendants(os.getpid()):
        for pid in descendants(os.getpid()):
            kill(pid)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            break
    os._exit(max(code, 0))
