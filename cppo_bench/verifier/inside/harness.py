"""The verifier's server INSIDE the sandbox, run as `python -I -S harness.py` (stdlib only).

One server serves one worker thread for its whole batch. It receives one program at a time
(compiled here once, for CE and for every test child to load; never run here) and, per
test, asks the zygote (zygote.py, forked before any program arrived) to fork a fresh child:
the child is the init of its own pid namespace, gets a fresh scratch tmpfs, no
capabilities, rlimits, the test input on a real fd 0, runs the program and reports on a
pipe. The server sums CPU and memory over the child's whole process tree while it runs,
sends the raw facts back, and the verifier outside holds the expected outputs and judges.
"""

from __future__ import annotations

import builtins
import fcntl
import json
import marshal
import os
import select
import signal
import socket
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nsutil  # noqa: E402  (sibling files, stdlib only)
from child import PRELUDES, READY  # noqa: E402
from procs import (  # noqa: E402
    Stream,
    TestCgroup,
    Tree,
    descendants,
    files_bytes,
    kill,
    pid_of,
    read_capped,
    supervise,
    wipe,
)
from programs import compile_program  # noqa: E402
from serversetup import ServerSetup  # noqa: E402
from warm import WarmChild  # noqa: E402
from wire import read_frame, write_frame  # noqa: E402

del sys.path[0]  # programs must not import the verifier's own modules

POLL_S = 0.05  # how often a running test's process tree is measured
SEALABLE = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
SEALED = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class Server(ServerSetup):
    def __init__(self, ctrl_in: int, ctrl_out: int, init: dict) -> None:
        self.ctrl_in, self.ctrl_out = ctrl_in, ctrl_out
        self.init = init
        self.userns = False
        self.prog: dict | None = None
        self.preludes = {k: compile(v, "<prelude>", "exec") for k, v in PRELUDES.items()}
        self.zygote = -1
        # (self.zsock: set with the first zygote, ServerSetup._start_zygote)
        # (pid, socket) of each zygote: "base", and "numpy" (imported it) once a program
        # that names numpy arrives; self.zygote / self.zsock are the current program's
        self.zygotes: dict[str, tuple[int, socket.socket] | None] = {}
        self.iso: dict = {}
        self.cgroup: TestCgroup | None = None  # the test's memory cgroup: its peak is read here
        self.handed_base = 0
        self.handed_fresh: list | None = None
        self.reuse = False  # may one child serve all of a program's tests (serversetup)
        self.warm: WarmChild | None = None  # the child kept for the program's next test
        self.known_names: dict[str, frozenset] = {}  # per prelude (see _module_names)

    # ---- programs ---------------------------------------------------------------------------
    def load(self, head: dict, code: bytes) -> dict:
        source = code.decode("utf-8", "replace")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # compile warnings: nobody reads our stderr
            known = self._module_names(head.get("prelude") or "none")
            obj, wrapped_or_error = compile_program(source, head["mode"], known)
        self._end_warm()
        if obj is None:
            return {"op": "ce", "error": wrapped_or_error}
        preloaded = self._use_zygote(source, head.get("prelude") or "none")
        # Compiled once per program, not once per test: each test child loads the marshalled
        # code object from this memfd (the zygote only passes the fd, never reads it).
        code_fd = os.memfd_create("program")
        blob = marshal.dumps((source, obj, bool(wrapped_or_error)))
        del obj
        view = memoryview(blob)
        while view:
            view = view[os.write(code_fd, view) :]
        scratch = self.init["scratch"]
        if not self.iso["private"]:  # no private tmpfs per test: a fresh dir, wiped after
            scratch = os.path.join(scratch, f"p{time.monotonic_ns()}")
            os.makedirs(scratch, mode=0o700)
        spec = {k: head.get(k) for k in ("mode", "prelude", "fn_name", "int_keys", "time_s",
                                          "mem_bytes", "fsize_bytes", "scratch_bytes")}  # fmt: skip
        # RLIMIT_FSIZE also caps stdout (a file): one byte past out_bytes shows the overflow
        spec["fsize_bytes"] = max(spec["fsize_bytes"], head["out_bytes"] + 1)
        # keep the child for the program's next tests (warm.py), if it has more than one
        spec["warm"] = self.reuse and int(head.get("tests", 2)) > 1
        # what the zygote preloaded is not the program's: its address space on top of the
        # limit (child.run_child), its resident set off every measure (run_test, procs.Tree)
        spec["as_extra"] = preloaded.get("as_bytes", 0)
        spec_json = json.dumps(dict(spec, scratch=scratch)).encode()
        self.prog = dict(head, scratch=scratch, code_fd=code_fd, spec_json=spec_json,
                         warm=spec["warm"], preloaded_kb=preloaded.get("rss_kb", 0))  # fmt: skip
        return {"op": "ready", "wrapped": bool(wrapped_or_error)}

    def _module_names(self, prelude: str) -> frozenset:
        """What a module-level read finds without the program: builtins and the prelude's
        names (the prelude run here once, in the server: the zygote forked before it)."""
        if prelude not in self.known_names:
            g: dict = {"__builtins__": builtins}
            exec(self.preludes.get(prelude, self.preludes["none"]), g)
            self.known_names[prelude] = frozenset(g) | frozenset(dir(builtins)) | {"np"}
        return self.known_names[prelude]

    def end(self) -> dict:
        self._end_warm()
        if self.prog is not None:
            os.close(self.prog["code_fd"])
            if self.prog["scratch"] != self.init["scratch"]:
                # Without per-test tmpfs: wipe the program's dir, and all of /tmp where it is
                # the sandbox's own (bwrap, containers), so nothing passes to the next program.
                wipe(self.init["scratch"] if self.init.get("private_tmp") else self.prog["scratch"])
        self.prog = None
        return {"op": "ended"}

    # ---- one test -------------------------------------------------------------------------
    def run_test(self, data: bytearray) -> tuple[dict, list]:
        prog = self.prog
        if prog is None:  # (the outside sends a program's tests only after its "load")
            raise RuntimeError("a test with no program loaded")
        in_fd = os.memfd_create("stdin", SEALABLE)
        view = memoryview(data)
        while view:
            view = view[os.write(in_fd, view) :]
        os.lseek(in_fd, 0, 0)
        # the input can be read, never written or grown: memory of a memfd counts nowhere
        fcntl.fcntl(in_fd, fcntl.F_ADD_SEALS, SEALED)
        data[:] = bytes(len(data))  # scrub: nothing of this input stays in our memory
        # stdout and the status are files (fresh memfds): the child never blocks on them and
        # we are not woken while it writes; RLIMIT_FSIZE caps them, and their sizes count as
        # the test's memory (procs.Tree: they cannot shrink, so the last size is the peak).
        # stderr, which a program may write without bound, is a pipe of which we keep the tail.
        out_fd, st_fd = os.memfd_create("stdout", SEALABLE), os.memfd_create("status", SEALABLE)
        for fd in (out_fd, st_fd):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        err_r, err_w = os.pipe()
        warm, ctl = self.warm, None
        if warm is not None and not warm.begin([in_fd, out_fd, err_w, st_fd], prog["time_s"]):
            self._end_warm()  # (it cannot serve this test: a fresh child does)
            warm = None
        ready_r = -1
        start = time.monotonic()
        if warm is None:
            # READY comes on a pipe of its own, closed before the program runs: the program
            # can rewrite its status file, but never the fact that its set-up succeeded
            ready_r, ready_w = os.pipe()
            fds = [prog["code_fd"], in_fd, out_fd, err_w, st_fd, ready_w]
            if prog["warm"]:  # a child to keep: its end of a control socket (warm.py)
                ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                fds.append(theirs.fileno())
            socket.send_fds(self.zsock, [prog["spec_json"]], fds)
            os.close(ready_w)
            if ctl is not None:
                theirs.close()
        os.close(in_fd)
        os.close(err_w)
        err = Stream(err_r, None)
        # The zygote hands the test over (a pidfd of its init, for measuring and killing)
        # only once it outlives EARLY_S: a short test costs us one wake-up, for its report.
        # (A reused child is ours from the start.)
        pidfd = tree = None
        if warm is not None:
            pidfd = warm.pidfd
            scratch = None if warm.scratch_fd is None else os.dup(warm.scratch_fd)
            tree = self._tree(warm.pid, prog, scratch, (out_fd, st_fd), warm.cpu0)
        over, exited, final, done = None, False, {}, False
        deadline = start + prog["wall_s"]
        next_poll = start + POLL_S
        zfd = self.zsock.fileno()
        while not (exited or over or done):
            now = time.monotonic()
            if now >= deadline:
                over = "wall"
                break
            if tree is not None and now >= next_poll:
                over = tree.measure()
                next_poll = now + POLL_S
                continue
            watch = [err.fd] * err.open + [self.ctrl_in, zfd]
            if warm is not None and warm.ctl is not None:
                watch.append(warm.ctl.fileno())
            until = deadline if tree is None else min(deadline, next_poll)
            ready = select.select(watch, [], [], until - now)[0]
            if self.ctrl_in in ready:  # the verifier is gone: leave nothing behind
                self._kill_test(pidfd)
                os._exit(0)
            if err.fd in ready:
                err.pump()
            if warm is not None and warm.ctl is not None and warm.ctl.fileno() in ready:
                done = warm.done()  # (or it is gone: its end comes from the zygote)
            if zfd in ready:
                handed, final = self._handover_or_report(1)
                if handed is not None:
                    pidfd, scratch_fd = handed
                    tree = self._tree(pid_of(pidfd), prog, scratch_fd, (out_fd, st_fd), 0.0)
                    if ctl is not None:  # the child to keep for the program's next tests
                        warm = self.warm = WarmChild(pidfd, tree.pid, ctl, scratch_fd, self.cgroup,
                                                     self.handed_base, self.handed_fresh)  # fmt: skip
                        ctl = None
                exited = bool(final.get("exited"))
        wall = time.monotonic() - start
        if over and pidfd is None:  # the zygote was slower than the whole deadline
            handed, final = self._handover_or_report(30)
            pidfd, scratch_fd = handed or (None, None)
            if scratch_fd is not None:
                os.close(scratch_fd)
            exited = bool(final.get("exited"))
        if ctl is not None:  # (a child to keep, never handed over: it is gone)
            ctl.close()
        files_kb = files_bytes((out_fd, st_fd)) >> 10
        if (
            done and warm is not None
        ):  # the kept child says the test is over: it waits for the next one
            final = warm.report(files_kb)
        else:
            self._kill_test(pidfd)
            if not exited:
                final = self._zrecv(30)  # {"exited"}: the test's init is reaped
            if "status" not in final:  # without a pid namespace it comes once orphans are gone
                final = self._zrecv(30)
            if warm is not None:  # the kept child ended with this test
                final = warm.died(final, files_kb)
                self._drop_warm()
            elif pidfd is not None:
                os.close(pidfd)
        if prog["preloaded_kb"] and "maxrss_kb" in final:  # (the zygote's, not the program's)
            final = dict(final, maxrss_kb=max(0, int(final["maxrss_kb"]) - prog["preloaded_kb"]))
        cpu_s, peak_kb = (tree.cpu_s, tree.peak_kb) if tree is not None else (0.0, 0)
        if tree is not None:
            tree.close()
        # the scratch tmpfs's pages and the output files are the test's memory too: what they
        # held at exit, with its peak resident set (no rlimit and no PSS sees tmpfs pages)
        held_kb = int(final.get("scratch_kb", 0)) + files_kb
        if held_kb:
            peak_kb = max(peak_kb, int(final["maxrss_kb"]) + held_kb)
        # the memory cgroup's count, where there is one: everything the kernel charged
        peak_kb = max(peak_kb, int(final.get("cgroup_kb", 0)))
        if peak_kb << 10 > prog["mem_bytes"]:
            over = over or "mem"
        err.drain()  # everyone is dead: take what is buffered, never wait
        # (every writer is dead too: the files no longer change)
        out, truncated = read_capped(out_fd, prog["out_bytes"])
        status, _ = read_capped(st_fd, prog["out_bytes"])
        if ready_r < 0 or _read_ready(ready_r):  # (a kept child's set-up was done before)
            status = READY + status
        head = {
            "op": "result",
            "exit": os.waitstatus_to_exitcode(final["status"]),
            "cpu_s": max(float(final["cpu_s"]), cpu_s),
            "wall_s": wall,
            "maxrss_kb": max(int(final["maxrss_kb"]), peak_kb),
            "timed_out": over == "wall",
            "cpu_exceeded": over == "cpu",
            "mem_exceeded": over == "mem",
            "truncated": truncated,
            "stderr": bytes(err.buf[-2000:]).decode("utf-8", "replace"),
        }
        return head, [out, status]

    def _tree(self, pid: int, prog: dict, scratch_fd, files: tuple, cpu0: float) -> Tree:
        tree = Tree(pid, prog, scratch_fd, files)
        tree.cpu_base = cpu0
        if self.cgroup is not None:
            tree.cgroup = (self.cgroup, int(self.handed_base))
        return tree

    def _end_warm(self) -> None:
        """The program is over (or its child will not serve): kill the kept child, and take
        the zygote's report of its end."""
        if self.warm is None:
            return
        self.warm.kill()
        msg = self._zrecv(30)
        if "status" not in msg:
            self._zrecv(30)
        self._drop_warm()

    def _drop_warm(self) -> None:
        if self.warm is not None:
            self.warm.close()
        self.warm = None

    def _kill_test(self, pidfd: int | None) -> None:
        """Kill the test's process tree: its pid namespace dies with its init; without one,
        every process below the zygote (orphans included: the zygote is their subreaper).
        (No pidfd: the test ended before the zygote handed it over.)"""
        if pidfd is not None:
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
        targets = [] if self.iso["pidns"] else descendants(self.zygote)
        for _ in range(1000):
            for p in targets:
                kill(p)
            if self.iso["pidns"] or not descendants(self.zygote):
                return
            targets = descendants(self.zygote)
            time.sleep(0.001)

    def kill_all(self) -> None:
        for zygote in self.zygotes.values():
            if zygote is not None:
                kill(zygote[0])


def _read_ready(fd: int) -> bool:
    """Did the test child finish its set-up (READY on its ready pipe)? Then close it."""
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 2) == READY
    except OSError:
        return False
    finally:
        os.close(fd)


SERVER: Server


def main() -> None:
    global SERVER
    if "--supervise" in sys.argv:
        supervise()
    ctrl_in, ctrl_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    head, _ = read_frame(ctrl_in)
    nsutil.set_name(b"cppo-server")
    SERVER = Server(ctrl_in, ctrl_out, head)
    write_frame(ctrl_out, SERVER.setup())
    while True:
        try:
            head, payload = read_frame(ctrl_in)
        except EOFError:
            break
        op = head.get("op")
        if op == "program":
            write_frame(ctrl_out, SERVER.load(head, bytes(payload)))
        elif op == "test":
            reply, parts = SERVER.run_test(payload)
            write_frame(ctrl_out, reply, parts)
        elif op == "end":
            write_frame(ctrl_out, SERVER.end())
        else:
            break
    SERVER.kill_all()
    os._exit(0)


if __name__ == "__main__":
    main()
