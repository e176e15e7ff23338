"""The server's set-up inside the sandbox (stdlib only, a part of harness.Server): CPU
binding, the file view outside bwrap, the uid drop, its own user namespace, no_new_privs,
then the zygote (harness.Server._start_zygote)."""

from __future__ import annotations

import builtins
import os
import resource
import signal
import sys

import nsutil
from child import _LCB_MODULES
from mounts import new_root
from procs import TestCgroup


def _exit(code=None):
    raise SystemExit(code)


class ServerSetup:
    """Set-up steps of harness.Server (its init message in self.init)."""

    init: dict
    userns: bool
    iso: dict

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
        builtins.exit = builtins.quit = _exit  # `site` normally adds these; -S skips it
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
