"""Talking to a sandboxed server (harness.py): the Sandbox handle, and picking the mode.

See launch.py for the isolation modes and how each is started.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

from cppo_bench.errors import UserError
from cppo_bench.util import env
from cppo_bench.util.termsafe import quote, warn
from cppo_bench.verifier import cpus
from cppo_bench.verifier.inside import wire
from cppo_bench.verifier.launch import (
    COMMAND_ENV,
    ENV,
    MODE_ENV,
    MODES,
    REUSE_ENV,
    SECCOMP_ENV,
    UNSAFE_ENV,
    MemCgroup,
    PidsCgroup,
    launch_spec,
)
from cppo_bench.verifier.spawn import spawn as _spawn

log = logging.getLogger("cppo_bench.verifier")


class SandboxError(UserError, RuntimeError):
    """The sandbox itself failed (not the program): cannot start, died, unresponsive."""


@dataclass(frozen=True)
class TestRun:
    """The raw facts of one test run; the verifier judges them (runner.judge)."""

    exit_code: int  # negative: killed by that signal
    cpu_s: float
    wall_s: float
    maxrss_kb: int
    timed_out: bool  # the wall-clock backstop fired
    truncated: bool  # output cap hit; the program was stopped
    stdout: bytes
    status: bytes  # the child's JSON report (empty if it died or called os._exit)
    stderr: str
    cpu_exceeded: bool = False  # the process tree's summed CPU passed the limit: killed
    mem_exceeded: bool = False  # the process tree's summed memory passed the limit: killed


# ---- picking the mode -----------------------------------------------------------------------

_MODE_LOCK = threading.Lock()
_MODE: str | None = None
# Its own lock: warn_once runs inside Sandbox.start, which sandbox_mode calls (through
# _probe) while holding _MODE_LOCK; sharing that non-reentrant lock deadlocked the probe
# (and left its server alive) whenever the probe had something to warn about.
_WARN_LOCK = threading.Lock()
_WARNED: set[str] = set()


def warn_once(message: str) -> None:
    with _WARN_LOCK:
        if message in _WARNED:
            return
        _WARNED.add(message)
    warn(log, message)


def sandbox_mode(keep_probe: bool = False) -> str:
    """The isolation mode this process uses (probed once; warns once when it is weaker).
    keep_probe: keep the probe's sandbox for take_probed (a pool about to start workers)."""
    global _MODE
    with _MODE_LOCK:
        if _MODE is not None:
            return _MODE
        forced = env.text(MODE_ENV, "") or ""
        if forced and forced not in (*MODES, "command"):
            raise SandboxError(f"{MODE_ENV}={quote(forced)}: one of {', '.join(MODES)}, command")
        for switch in (SECCOMP_ENV, REUSE_ENV):  # a bad switch is its own line, not the
            env.flag(switch, True)  # reason every mode's probe failed
        failures = []
        for mode in [forced] if forced else list(MODES):
            tool = {"bwrap": "bwrap", "unshare": "unshare"}.get(mode)
            if tool and shutil.which(tool) is None:
                failures.append(f"{mode}: `{tool}` not installed")
                continue
            problem = _probe(mode, keep_probe)
            if problem is None:
                _MODE = mode
                break
            failures.append(f"{mode}: {problem}")
        else:
            raise SandboxError("no sandbox mode works here: " + "; ".join(failures))
    if _MODE not in ("bwrap", "command"):
        why = f"{MODE_ENV}={forced}" if forced else "bubblewrap unusable: " + "; ".join(failures)
        warn_once(
            f"verifier sandbox: {why}; using the weaker '{_MODE}' mode (what it does not "
            "guarantee: cppo_bench/verifier/SECURITY.md). Install bubblewrap for full "
            "isolation."
        )
    return _MODE


# The sandbox that proved a mode works, kept for the first worker that asks (starting a
# sandbox is the largest fixed cost of a short `cppo-bench verify`): at most one.
_PROBED: list[Sandbox] = []


def settings(mode: str, nproc: int) -> tuple:
    """What a sandbox is started with (mode, process cap, the environment it reads): one is
    handed to a caller only for the same settings."""
    return (mode, nproc, *(env.raw(n) for n in (SECCOMP_ENV, COMMAND_ENV, REUSE_ENV)))


def take_probed(key: tuple) -> Sandbox | None:
    """The probe's sandbox, if it is still alive and was started with these settings."""
    with _MODE_LOCK:
        box = _PROBED.pop() if _PROBED else None
    if box is None:
        return None
    if box.settings == key and box.proc is not None and box.proc.poll() is None:
        return box
    box.close()
    return None


def why_unusable(mode: str) -> str | None:
    """Why `mode` cannot run programs here (a probe of a fresh sandbox), or None when it can;
    the doctor's words for a mode this process did not pick."""
    return _probe(mode, keep_box=False)


def _probe(mode: str, keep_box: bool) -> str | None:
    box = Sandbox(mode)
    keep = False
    try:
        box.start()
        spec = {"mode": "stdin", "prelude": "none", "time_s": 5, "wall_s": 10,
                "mem_bytes": 256 << 20, "out_bytes": 1 << 20, "fsize_bytes": 1 << 20,
                "scratch_bytes": 1 << 20}  # fmt: skip
        if box.load(spec, "print(input()[::-1])") is not None:
            return "could not compile the probe program"
        run = box.run_test(b"abc\n", timeout=20)
        if run.stdout != b"cba\n":
            return f"probe program printed {quote(run.stdout[:80])}"
        box.end()
        keep = keep_box
        return None
    except (SandboxError, OSError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    finally:
        if keep:  # (called under _MODE_LOCK)
            old, _PROBED[:] = list(_PROBED), [box]
            for stale in old:
                stale.close()
        else:
            box.close()


# ---- one sandbox (thread-confined) ----------------------------------------------------------


class Sandbox:
    """One server process; used by one thread at a time, for many programs in turn."""

    def __init__(self, mode: str | None = None, nproc: int = 64) -> None:
        self.mode, self.nproc = mode, nproc
        self.proc: subprocess.Popen | None = None
        self.hello: dict = {}
        self._buf = bytearray()
        self._err = bytearray()  # the tail of the server's stderr
        self._cgroup: PidsCgroup | None = None
        self._memcg: MemCgroup | None = None
        self._pending_ends = 0  # "ended" replies not read yet (see end)
        self._cpu: tuple[int, int] | None = None  # (cpu, token): see cpus.py
        self._slot = cpus.CpuSlot()  # held while a test runs: one test per CPU (cpus.py)
        self.settings: tuple = ()  # what it was started with (see settings())

    @property
    def cpu(self) -> int | None:
        """The CPU this sandbox's processes are bound to (None: not bound)."""
        return self._cpu[0] if self._cpu else None

    @property
    def label(self) -> str:
        return (self.mode or "?") + ("" if self.hello.get("userns", True) else "-nouserns")

    def start(self) -> None:
        self.mode = self.mode or sandbox_mode()
        self.settings = settings(self.mode, self.nproc)
        try:
            argv, init = launch_spec(self.mode, self.nproc)
        except ValueError as exc:
            raise SandboxError(str(exc)) from None
        child_env = dict(ENV) if self.mode in ("unshare", "rlimits") else None
        self._buf, self._pending_ends = bytearray(), 0  # nothing of an earlier server
        # a memory cgroup where the host offers one (not for a container: its own runtime's)
        self._memcg = MemCgroup.create() if self.mode != "command" else None
        if self._memcg is not None:
            init["memcg"] = dict(self._memcg.fds)
        try:
            self.proc = _spawn(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, env=child_env, bufsize=0,
                pass_fds=tuple(self._memcg.fds.values()) if self._memcg else (),
            )  # fmt: skip
        except OSError as exc:
            self._release()
            raise SandboxError(f"cannot start the {self.mode} sandbox: {exc}") from None
        if self._memcg is not None:
            self._memcg.close_fds()  # (the sandbox holds its own copies now)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:  # (all three are pipes: PIPE above)
                os.set_blocking(pipe.fileno(), False)
        if self.mode != "command":  # (a container numbers its CPUs its own way)
            cpus.give_back(self._cpu)
            self._cpu = cpus.take()
            init["cpu"] = self._cpu[0] if self._cpu else None
            self._slot.bind(self.cpu)
        self._send(init)
        self.hello = self._recv(timeout=30)[0]
        if self.mode != "bwrap" and os.geteuid() == 0:  # RLIMIT_NPROC does not bind root
            self._cgroup = PidsCgroup.create(self.nproc)
            if self._cgroup is not None:
                self._cgroup.adopt(self.proc.pid)  # the server forks only after this
            elif init["drop_uid"] is None:
                warn_once("verifier sandbox: running as root without a pids cgroup: fork "
                          "bombs are not contained in this mode")  # fmt: skip
        if self.hello.get("notes"):
            warn_once("verifier sandbox: " + "; ".join(self.hello["notes"]))
        if os.geteuid() == 0 and self.mode != "command" and not self.hello.get("dropped"):
            # Programs would run as host root (owner of root's files, whatever the caps).
            if not env.flag(UNSAFE_ENV, False):
                notes = "; ".join(self.hello.get("notes", [])) or "no uid drop"
                self.kill()
                raise SandboxError(
                    f"{self.mode}: cannot run programs unprivileged here ({notes}); refusing "
                    "to run untrusted code as root (--unsafe-no-sandbox to run it anyway)"
                )
            warn_once("verifier sandbox: --unsafe-no-sandbox: programs run as root, UNISOLATED")

    def load(self, spec: dict, code: str) -> str | None:
        """Send a program; returns the compile error (verdict CE) or None. Compiling is the
        program's work on this CPU too (a long source can take seconds): held as a test is."""
        with self._slot.held():
            self._send(dict(spec, op="program"), code.encode("utf-8", "surrogatepass"))
            head = self._recv(timeout=60)[0]
        return head.get("error", "compile error") if head.get("op") == "ce" else None

    def run_test(self, data: bytes, timeout: float) -> TestRun:
        with self._slot.held():  # the test's wall time is its own (see cpus.py)
            self._send({"op": "test"}, data)
            head, payload = self._recv(timeout=timeout)
        try:
            stdout, status = wire.split_parts(head, payload)
            return self._test_run(head, stdout, status)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise SandboxError(f"malformed test result from the sandbox: {exc}") from None

    @staticmethod
    def _test_run(head: dict, stdout: bytes, status: bytes) -> TestRun:
        return TestRun(
            exit_code=int(head["exit"]), cpu_s=float(head["cpu_s"]), wall_s=float(head["wall_s"]),
            maxrss_kb=int(head["maxrss_kb"]), timed_out=bool(head["timed_out"]),
            truncated=bool(head["truncated"]), stdout=stdout, status=status,
            stderr=str(head.get("stderr", "")), cpu_exceeded=bool(head.get("cpu_exceeded")),
            mem_exceeded=bool(head.get("mem_exceeded")),
        )  # fmt: skip

    def end(self) -> None:
        """End the program. Its "ended" reply is read before the next reply, not waited
        for now (one round trip less per program; the server handles frames in order)."""
        self._send({"op": "end"})
        self._pending_ends += 1

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            self._release()
            return
        try:
            self._write(proc, wire.HEAD.pack(2, 0) + b"{}", deadline=time.monotonic() + 1)
        except (SandboxError, OSError):
            pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._kill(proc)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        self._release()

    def _release(self) -> None:
        """What a stopped server held on the host: its CPU place and its pids cgroup."""
        cpus.give_back(self._cpu)
        self._cpu = None
        self._slot.close()
        cgroup, self._cgroup = self._cgroup, None
        if cgroup is not None:
            cgroup.destroy()  # kills anything the programs left behind
        memcg, self._memcg = self._memcg, None
        if memcg is not None:
            memcg.destroy()

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            self._kill(proc)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        self._release()

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()

    # ---- framing with deadlines ----
    def _send(self, head: dict, payload: bytes = b"") -> None:
        if self.proc is None:
            raise SandboxError("sandbox is not running")
        raw = json.dumps(dict(head, parts=[len(payload)] if payload else [])).encode()
        frame = wire.HEAD.pack(len(raw), len(payload)) + raw + payload
        self._write(self.proc, frame, deadline=time.monotonic() + 60)

    def _write(self, proc: subprocess.Popen, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        if proc.stdin is None:  # (never: it is started with stdin=PIPE)
            raise SandboxError("sandbox has no input pipe")
        fd = proc.stdin.fileno()
        while view:
            if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
                raise SandboxError("sandbox is not reading its input")
            try:
                view = view[os.write(fd, view) :]
            except BrokenPipeError:
                raise SandboxError(self._death_note()) from None

    def _recv(self, timeout: float) -> tuple[dict, bytes]:
        while True:
            head, payload = self._recv_frame(timeout)
            if self._pending_ends and head.get("op") == "ended":
                self._pending_ends -= 1
                continue
            return head, payload

    def _recv_frame(self, timeout: float) -> tuple[dict, bytes]:
        deadline = time.monotonic() + timeout
        need = wire.HEAD.size
        sizes = None
        while True:
            if len(self._buf) >= need:
                if sizes is None:
                    sizes = wire.HEAD.unpack(self._buf[: wire.HEAD.size])
                    need = wire.HEAD.size + sizes[0] + sizes[1]
                    if sizes[0] > 1 << 20:
                        raise SandboxError("malformed reply from the sandbox")
                    continue
                frame = bytes(self._buf[:need])
                del self._buf[:need]
                try:
                    head = json.loads(frame[wire.HEAD.size : wire.HEAD.size + sizes[0]])
                except (ValueError, RecursionError):
                    head = None
                if not isinstance(head, dict):
                    raise SandboxError("malformed reply from the sandbox")
                return head, frame[wire.HEAD.size + sizes[0] :]
            fd = self.proc.stdout.fileno() if self.proc and self.proc.stdout else -1
            left = deadline - time.monotonic()
            # The server's stderr is drained too (keeping a tail): a full stderr pipe would
            # block the server and look like a hang.
            err = self.proc.stderr.fileno() if self.proc and self.proc.stderr else -1
            ready = select.select([fd, err] if err >= 0 else [fd], [], [], max(left, 0))[0]
            if err in ready:
                self._pump_stderr()
                if fd not in ready:
                    continue
            if fd < 0 or left <= 0 or not ready:
                raise SandboxError("the sandbox did not answer in time")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise SandboxError(self._death_note())
            self._buf += chunk

    def _pump_stderr(self) -> None:
        try:
            chunk = (
                os.read(self.proc.stderr.fileno(), 1 << 16)
                if self.proc and self.proc.stderr
                else b""
            )
        except (BlockingIOError, OSError, ValueError):
            return
        self._err += chunk
        del self._err[: max(0, len(self._err) - 4000)]

    def _death_note(self) -> str:
        self._pump_stderr()
        tail = bytes(self._err).decode("utf-8", "replace").strip().splitlines()[-1:]
        tail = tail or ["no message"]
        return f"the sandbox died ({tail[0][:300]})"
