"""The server's set-up inside the sandbox (stdlib only, a part of harness.Server): CPU
binding, the file view outside bwrap, the uid drop, its own user namespace, no_new_privs,
then the zygotes it forks and speaks to (the base one, and the numpy one a program asks for)."""

from __future__ import annotations

import builtins
import json
import os
import resource
import select
import signal
import socket
import sys
from types import CodeType

import nsutil
from child import _LCB_MODULES
from mounts import new_root
from procs import TestCgroup, pid_of
from programs import imports_numpy
from zygote import zygote_main


def _preloaded(base: int, zygote: int) -> dict:
    """What a zygote holds beyond the base one (numpy, imported): address space and
    resident set, from the kernel's view of both (/proc, which the server sees). A test
    child inherits it all: its address-space limit is raised by it and its resident set
    counted less it, so that a program's limit is the same from either zygote."""
    sizes = [_vm(pid) for pid in (base, zygote)]
    return {"as_bytes": max(0, sizes[1][0] - sizes[0][0]) << 10,
            "rss_kb": max(0, sizes[1][1] - sizes[0][1])}  # fmt: skip


def _vm(pid: int) -> tuple[int, int]:
    """VmSize and VmRSS of a process, in kB (0, 0 where /proc does not say)."""
    out = {b"VmSize:": 0, b"VmRSS:": 0}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                key = line.split(None, 1)[0] if line.strip() else b""
                if key in out:
                    out[key] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return out[b"VmSize:"], out[b"VmRSS:"]


def _exit(code=None):
    raise SystemExit(code)


class ServerSetup:
    """Set-up steps of harness.Server (its init message in self.init)."""

    init: dict
    userns: bool
    iso: dict
    ctrl_in: int
    ctrl_out: int
    preludes: dict[str, CodeType]
    zygote: int
    zsock: socket.socket  # the current program's zygote (set by _start_zygote, before use)
    # each zygote by name; None where it was tried and failed (see _use_zygote)
    zygotes: dict[str, tuple[int, socket.socket] | None]
    preloaded: dict

    # ---- set-up -------------------------------------------------------------------------
    def setup(self) -> dict:
        notes: list[str] = []
        if self.init.get("cpu") is not None:  # inherited by the zygote and every test
            try:
                os.sched_setaffinity(0, {self.init["cpu"]})
            except OSError as exc:
                notes.append(f"could not bind to CPU {self.init['cpu']}: {exc}")
        for name in _LCB_MODULES + ["fractions", "typing", "time", "traceback", "warnings"]:
            __import__(name)  # while we can surely read the install (before any uid drop)
        uid = self.init.get("drop_uid")
        if self.init.get("fix_mounts") and os.geteuid() == 0:
            self._fix_mounts(uid if uid is not None else os.geteuid(), notes)
        dropped = False
        if uid is not None and os.geteuid() == 0:
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                dropped = True
            except OSError as exc:
                notes.append(f"could not drop to uid {uid}: {exc}")
        host_uid = os.geteuid()
        mapped = False
        if self.init.get("userns"):
            mapped = self._enter_userns(notes)
        # The uid drop and the new user namespace cleared the parent-death signal (bwrap's
        # --die-with-parent): set it again. (Where the parent may not signal us, e.g. a root
        # bwrap without CAP_KILL, the verifier's end of our control pipe closing ends us.)
        parent = os.getppid()
        nsutil.prctl(nsutil.PR_SET_PDEATHSIG, signal.SIGKILL)
        if parent == 0 and os.getpid() != 1 or parent == 1 and os.getpid() != 1:
            os._exit(0)  # the parent already died
        nsutil.prctl(nsutil.PR_SET_CHILD_SUBREAPER, 1)
        nproc = self.init.get("nproc")
        if nproc and (self.userns or os.geteuid() != 0):
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        # THE place no_new_privs is set: inherited by the zygote and every test child (which
        # refuse to run a program without it: nsutil.clear_capabilities)
        nsutil.check(nsutil.prctl(nsutil.PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
        nsutil.prctl(nsutil.PR_SET_DUMPABLE, 0)  # same-uid processes may not ptrace us
        if self.init.get("site"):
            sys.path.append(self.init["site"])
        for name in ("exit", "quit"):  # `site` normally adds these; -S skips it
            setattr(builtins, name, _exit)
        sys.set_int_max_str_digits(0)
        scratch = self.init["scratch"]
        self.iso = {
            "private": mapped,
            # per-test user namespaces (own keyrings); the kernel lets a process map only its
            # own uid into a new one, and never uid 0 without CAP_SETFCAP outside it
            "userns": mapped and os.geteuid() != 0,
            "scratch": scratch,
            "keep": nsutil.under(self.init.get("keep", []), scratch),
            "readonly_host": self.init.get("readonly_host", False),
            "seccomp": self.init.get("seccomp", True),
            "memcg": self.init.get("memcg"),  # fds of the test's memory cgroup (procs.TestCgroup)
        }
        self._start_zygote()
        self.cgroup = TestCgroup(self.iso["memcg"]) if self.iso.get("cgroup_ok") else None
        if self.iso.get("memcg") and self.cgroup is None:
            notes.append("the memory cgroup could not be used: memory counted without it")
        # one child for all the tests of a program (warm.py), where it is accounted as fully
        # as a fresh one: its own pid namespace, no process creation, a memory cgroup
        self.reuse = bool(self.init.get("reuse") and self.iso["pidns"] and self.cgroup
                          and self.iso.get("filtered"))  # fmt: skip
        if not self.iso["pidns"]:
            notes.append("no pid namespace per test: programs can see the server")
        return {
            "op": "hello",
            "uid": os.geteuid(),
            "host_uid": host_uid,
            "dropped": dropped,
            "nnp": nsutil.prctl(nsutil.PR_GET_NO_NEW_PRIVS) == 1,
            "pid1": os.getpid() == 1,
            "userns": self.userns,
            "pidns": self.iso["pidns"],
            "reuse": self.reuse,
            "notes": notes,
        }

    def _fix_mounts(self, uid: int, notes: list) -> None:
        """Outside bwrap, as root: in our own mount namespace, bwrap's view (mounts.new_root:
        the Python install and numpy read-only, a scratch, nothing of the host's files) and a
        minimal /dev. Inside it every directory is traversable by `uid`."""
        if nsutil.unshare(nsutil.CLONE_NEWNS) != 0:
            notes.append("no mount namespace: host /dev and paths stay as they are")
            return
        try:
            new_root(self.init.get("reveal", []), self.init["scratch"])
            nsutil.minimal_dev()
        except (OSError, KeyError) as exc:
            notes.append(f"mount set-up failed: {exc}")

    def _enter_userns(self, notes: list) -> bool:
        """A private user namespace makes RLIMIT_NPROC count this sandbox only; once our uid
        is mapped in it, we hold the capabilities to give each test its own namespaces."""
        uid, gid = os.geteuid(), os.getegid()
        nsutil.prctl(nsutil.PR_SET_DUMPABLE, 1)  # /proc/self/*_map is root-owned otherwise
        if nsutil.unshare(nsutil.CLONE_NEWUSER) != 0:
            notes.append("no user namespace")
            return False
        self.userns = True
        try:
            nsutil.map_ids(uid, gid)
        except OSError as exc:
            notes.append(f"user namespace maps failed: {exc}")
            return False
        if nsutil.unshare(nsutil.CLONE_NEWNET | nsutil.CLONE_NEWUTS) != 0:
            notes.append("no network namespace")
        return True

    # ---- the zygotes ------------------------------------------------------------------------
    def _start_zygote(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The zygote is the init of a pid namespace owned by our user namespace, so that it
        # may give each test a pid namespace of its own and step back into its own after.
        own_pidns = bool(self.userns) and nsutil.unshare(nsutil.CLONE_NEWPID) == 0
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                for fd in (self.ctrl_in, self.ctrl_out):
                    os.close(fd)
                zygote_main(theirs, self.iso, self.preludes)
            finally:
                os._exit(1)
        theirs.close()
        self.zygote, self.zsock = pid, ours
        self.zygotes["base"] = (pid, ours)
        hello = self._zrecv(30)
        self.iso["pidns"] = own_pidns and bool(hello.get("pidns"))
        self.iso["cgroup_ok"] = bool(hello.get("cgroup"))
        self.iso["filtered"] = bool(hello.get("filtered"))

    def _use_zygote(self, source: str, prelude: str) -> dict:
        """The zygote for this program: the numpy one where the program imports numpy
        (`programs.imports_numpy`; forked by the base zygote the first time, from its
        pristine memory), else the base. Returns what that zygote holds beyond the base
        one, which is not the program's: {"as_bytes", "rss_kb"} (see `_preloaded`)."""
        self.zygote, self.zsock = base = self._base_zygote()
        # (only with a pid namespace per test: without one, the base zygote reaps any child
        # of its own after a test, and would wait for the numpy zygote forever)
        if (not imports_numpy(source, prelude) or self.zygotes.get("numpy", ()) is None
                or not self.iso["pidns"]):  # fmt: skip
            return {}
        if "numpy" not in self.zygotes:
            self.zygotes["numpy"] = None  # (tried once: a failure falls back to the base)
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            socket.send_fds(self.zsock, [b'{"op": "numpy"}'], [theirs.fileno()])
            theirs.close()
            self.zsock = ours
            got: list[int] = []
            try:
                hello = self._zrecv(60, got)
            except (RuntimeError, ValueError):
                hello = {}
            if hello.get("numpy") and got:
                self.zygotes["numpy"] = (pid_of(got[0]), ours)
                self.preloaded = _preloaded(base[0], pid_of(got[0]))
            else:
                ours.close()
            for fd in got:
                os.close(fd)
            self.zygote, self.zsock = base
        numpy = self.zygotes.get("numpy")
        if numpy is not None:
            self.zygote, self.zsock = numpy
            return self.preloaded
        return {}

    def _base_zygote(self) -> tuple[int, socket.socket]:
        base = self.zygotes.get("base")
        if base is None:  # (_start_zygote runs at set-up, before any program)
            raise RuntimeError("no zygote was started")
        return base

    def _zrecv(self, timeout: float, fds: list | None = None) -> dict:
        if not select.select([self.zsock], [], [], timeout)[0]:
            raise RuntimeError("the zygote did not answer")
        msg, got, _, _ = socket.recv_fds(self.zsock, 1 << 16, 2)
        if not msg:
            raise RuntimeError("the zygote died")
        if fds is not None:
            fds += got
        else:
            for fd in got:
                os.close(fd)
        return json.loads(msg)

    def _handover_or_report(self, timeout: float) -> tuple[tuple | None, dict]:
        """The zygote's next message about a running test: ((the pidfd of its init, its
        scratch directory's fd or None), {}) when it hands the test over, else (None, the
        message: {"exited"} or the report)."""
        got: list[int] = []
        msg = self._zrecv(timeout, got)
        if msg.get("started") and got:
            self.handed_base = int(msg.get("cg_base", 0))
            self.handed_fresh = msg.get("fresh")  # (the scratch as the test found it)
            return (got[0], got[1] if len(got) > 1 else None), {}
        for fd in got:
            os.close(fd)
        return None, msg
