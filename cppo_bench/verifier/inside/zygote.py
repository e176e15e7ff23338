"""The zygote, inside the sandbox (stdlib only): forks every test child.

It is forked from the server right after set-up, before the server ever receives a program,
and never reads program data itself: each request brings the program source, the test
input and the output pipes as file descriptors (SCM_RIGHTS), which only the forked child
reads. So a test child inherits a memory image that never held another program's code,
input or output. Each child is the init of a fresh pid namespace (where the kernel allows):
the server and the zygote are not in it, so a program cannot signal, prlimit or ptrace
them, and killing the child takes down everything it started.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import signal
import socket

import nsutil
import seccomp
from child import SETUP_FAILED, prelude_globals, run_child, self_signal_handlers, std_streams
from mounts import hide_proc, reset_scratch, scratch_bytes, scratch_state, shared_mounts
from procs import open_cgroup
from warm import scratch_state as scratch_fd_state

FDS = ("code", "input", "out", "err", "status", "ready")
EARLY_S = 0.02  # a test still running after this is handed to the server (see below)


def probe_pidns(own: int) -> bool:
    """Can we give each test its own pid namespace? (unshare, then back to our own.)"""
    if nsutil.unshare(nsutil.CLONE_NEWPID) != 0:
        return False
    return nsutil.LIBC.setns(own, nsutil.CLONE_NEWPID) == 0


def zygote_main(sock: socket.socket, iso: dict, preludes: dict) -> None:
    """Serve fork requests until the server closes the socket. Never returns."""
    nsutil.set_name(b"cppo-zygote")
    nsutil.prctl(nsutil.PR_SET_PDEATHSIG, signal.SIGKILL)
    nsutil.prctl(nsutil.PR_SET_CHILD_SUBREAPER, 1)  # orphans stay below us, for accounting
    own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    iso = dict(iso, pidns=probe_pidns(own))
    iso["premounted"] = shared_mounts(iso)
    iso["scratch_ready"] = False
    iso["cgroup"] = open_cgroup(iso.get("memcg"))
    # Once for all tests, inherited by every child: no keyrings and no System V IPC at all
    # (seccomp), an empty capability bounding set. Then freeze what we hold, so that a
    # child's garbage collector does not touch (and copy) every page of it.
    iso["denied"] = iso["seccomp"] and nsutil.deny_shared_kernel_state()
    iso["bounded"] = nsutil.drop_bounding_set()
    # the filter each test child installs just before its program runs (seccomp.py)
    iso["filter"] = seccomp.build_filter()
    iso["filtered"] = seccomp.works(iso["filter"])
    # no /proc for the tests (the per-test user namespace path writes its maps there)
    iso["proc_hidden"] = iso["premounted"] and iso["denied"] and hide_proc(iso)
    self_signal_handlers()
    # Facts every test child would otherwise check or build for itself, at a cost per test
    # (ctypes calls and fresh objects fault in copy-on-write pages): no_new_privs is set
    # (the server set it; it is inherited and cannot be unset), whether we are the init of
    # our pid namespace (then our death kills every test process: no parent-death signal
    # needed), the program's text streams, the preludes' globals.
    iso["nnp"] = nsutil.prctl(nsutil.PR_GET_NO_NEW_PRIVS) == 1
    iso["zygote_is_init"] = os.getpid() == 1
    std_streams()
    globals_by = prelude_globals(preludes)
    gc.collect()
    gc.freeze()
    # free heap pages back to the kernel: every resident page is copied into each child's
    # page table at fork and torn down at its exit (glibc only; elsewhere nothing to do)
    trim = getattr(nsutil.LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)
    hello = {
        "pidns": iso["pidns"],
        "cgroup": iso["cgroup"] is not None,
        "filtered": iso["filtered"],
    }
    sock.send(json.dumps(hello).encode())
    _serve(sock, iso, globals_by, own)


def _numpy_zygote(sock: socket.socket, iso: dict, globals_by: dict, own: int) -> None:
    """A second zygote, forked from this one (so it never held program data either), that
    has imported numpy: a program that imports it then pays nothing per test (the import
    is ~0.1 s, on every test, from a zygote without it). Serves on its own socket."""
    nsutil.set_name(b"cppo-zygote-np")
    nsutil.prctl(nsutil.PR_SET_CHILD_SUBREAPER, 1)
    iso = dict(iso, zygote_is_init=False)
    me = os.pidfd_open(os.getpid())
    try:
        import numpy  # noqa: F401  (bound into every sandbox for the programs)

        ok = True
    except Exception:  # (any failure of a foreign package's import: no numpy zygote)
        ok = False
    gc.collect()
    gc.freeze()
    socket.send_fds(sock, [json.dumps({"numpy": ok}).encode()], [me])
    os.close(me)
    if not ok:
        os._exit(0)
    _serve(sock, iso, globals_by, own)


def _serve(sock: socket.socket, iso: dict, globals_by: dict, own: int) -> None:
    """Fork a test child per request until the server closes the socket. Never returns."""
    last, last_program = b"", None
    sock_fd = sock.fileno()
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, len(FDS) + 1)
        except OSError:
            os._exit(0)
        if msg == b'{"op": "numpy"}' and len(fds) == 1:
            if os.fork() == 0:
                sock.close()
                _numpy_zygote(socket.socket(fileno=fds[0]), iso, globals_by, own)
            os.close(fds[0])
            continue
        if not msg:
            os._exit(0)
        if msg != last:  # the same for every test of a program
            spec, last = json.loads(msg), msg
        # a child to keep for the program's next tests brings its control socket (warm.py)
        names = FDS + ("ctl",) if spec.get("warm") else FDS
        if len(fds) != len(names):
            os._exit(0)
        # A new scratch tmpfs made just before the test starts: a new superblock (its inode
        # counter starts over, whatever unlinked files the last test made) whose times say
        # only when it started (a reset after a test wrote the time that test ended, which
        # the next program could read). For every program's first test, always; for its
        # later tests, only when the last one left something (what one test of a program
        # tells the next of the same program, the program knew).
        st = os.fstat(fds[0])  # the program's code memfd: which program (never read here)
        program = (msg, st.st_dev, st.st_ino)
        if iso["premounted"] and (program != last_program or not iso.get("scratch_ready")
                                  or scratch_state(iso) != iso.get("scratch_clean")):  # fmt: skip
            reset_scratch(iso, spec["scratch_bytes"])
        last_program = program
        # the scratch as the test finds it, for a child kept for later tests (warm.py): it
        # serves the next one only if its scratch is still so
        kept = spec.get("warm") and iso.get("scratch_ready")
        fresh = scratch_fd_state(iso["scratch_fd"]) if kept else None
        cgroup = iso.get("cgroup")
        base = cgroup.enter(spec["mem_bytes"]) if cgroup is not None else 0
        before = resource.getrusage(resource.RUSAGE_CHILDREN)  # (read without a pid namespace)
        if iso["pidns"]:
            nsutil.check(nsutil.unshare(nsutil.CLONE_NEWPID), "unshare pid")
        pid = os.fork()
        if pid == 0:
            try:
                os.close(sock_fd)
                os.close(own)
                run_child(spec, globals_by, dict(zip(names, fds, strict=True)), iso)
            finally:
                os._exit(SETUP_FAILED)
        # Until the test ends, every page we write is copied (the child still shares it), so
        # we touch as little as we can: what is not needed to wait comes after.
        # A test that outlives EARLY_S is handed to the server, which measures its process
        # tree and kills it at its limits (a pidfd: our pid numbers mean nothing there).
        # Most end sooner, and cost the server a single message: the report.
        if cgroup is not None:
            cgroup.leave()  # (the child stays in the test group, and all it makes)
        pidfd = os.pidfd_open(pid)
        # (a reused child is handed over at once: the server ends each of its tests)
        if spec.get("warm") or not select.select([pidfd], [], [], EARLY_S)[0]:
            scratch = [iso["scratch_fd"]] if iso.get("scratch_ready") else []
            head = {"started": True, "cg_base": base, "fresh": fresh}
            socket.send_fds(sock, [json.dumps(head).encode()], [pidfd, *scratch])
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        for fd in fds:
            os.close(fd)
        if iso["pidns"]:
            nsutil.check(nsutil.LIBC.setns(own, nsutil.CLONE_NEWPID), "setns pid")
            # every process of the test died with its init, which reaped them: its usage
            # (wait4: its own and its children's) is the whole test's
            cpu = usage.ru_utime + usage.ru_stime
        else:  # orphans the server kills once it hears the program is gone
            sock.send(b'{"exited": true}')
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        # what the test left in the scratch tmpfs is memory it held (no rlimit counts it)
        held = scratch_bytes(iso["scratch_fd"]) >> 10 if iso.get("scratch_ready") else 0
        # the test group's peak above the base: all the test held, kernel memory included
        cg_kb = max(0, cgroup.peak() - base) >> 10 if cgroup is not None else 0
        sock.send(b'{"exited": true, "status": %d, "cpu_s": %r, "maxrss_kb": %d, "scratch_kb": %d, '
                  b'"cgroup_kb": %d}' % (status, cpu, usage.ru_maxrss, held, cg_kb))  # fmt: skip
