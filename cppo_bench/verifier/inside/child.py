"""The forked per-test child, inside the sandbox (stdlib only, imported by harness.py).

It isolates itself (own process group; the scratch tmpfs the zygote remounts between tests,
or its own mount and IPC namespaces where that is not possible; no capabilities; rlimits),
puts the test input on a real fd 0 (so `sys.stdin.buffer` works),
runs the program the way the benchmark's official harness does (same prelude names, the
`Solution()` method for LeetCode rows) and reports a small JSON status on fd 3.
"""

from __future__ import annotations

import builtins
import io
import json
import marshal
import os
import resource
import signal
import sys
from typing import Any

import nsutil
import seccomp
import warm
from mounts import private_mounts
from programs import WRAPPED
from reset import Fresh
from wire import encode_value

NOFILE = 64  # RLIMIT_NOFILE of a test
SETUP_FAILED = 120  # exit code of a child whose sandbox set-up failed (a harness fault)
READY = b"R"  # on the ready pipe just before the program runs (the server prefixes the status)
MEMORY_ERROR = b'{"exc": "MemoryError"}'  # built up front: no allocation needed after OOM

# What each official harness defines before the solution runs (mirrored, in our own words).
_APPS = (
    "import sys, time, itertools, collections, math, fractions, random, heapq\n"
    "from itertools import accumulate, product, permutations, combinations\n"
    "from collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\n"
    "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2\n"
    "from typing import List, Tuple\n"
    "from heapq import *\n"
)
_LCB_MODULES = (
    "string re datetime collections heapq bisect copy math random statistics itertools "
    "functools operator io sys json"
).split()
_LCB = "".join(
    f"from {m} import *\n" for m in _LCB_MODULES[:-1] + ["json", "builtins", "typing"]
) + "".join(f"import {m}\n" for m in _LCB_MODULES)
PRELUDES = {"none": "", "apps": _APPS, "lcb": _LCB}
# What a prelude sets for the whole process (the official LCB harness raises the recursion
# limit): done in each test child, since the preludes themselves run once, in the zygote.
RECURSION_LIMITS = {"lcb": 50000}


class LazyNumpy:
    """APPS' prelude binds `np`; importing numpy eagerly would cost every test ~80 ms."""

    def __getattr__(self, name: str):
        import numpy

        return getattr(numpy, name)


_REAL_OPEN = builtins.open


def _apps_open(file, mode="r", *args, **kwargs):
    """APPS' harness answers every open() with the test input (a mock); references that read
    e.g. input.txt pass there, so a missing file opened for reading gives the input here."""
    try:
        return _REAL_OPEN(file, mode, *args, **kwargs)
    except FileNotFoundError:
        if any(c in mode for c in "wax+"):
            raise
        data = os.pread(0, os.fstat(0).st_size, 0)
        return io.BytesIO(data) if "b" in mode else io.StringIO(data.decode("utf-8", "replace"))


# Default-action signals the kernel would not deliver to a pid namespace's init when the
# program sends them to itself (kill, alarm, SIGXCPU at the soft CPU limit). Hardware faults
# (SEGV, BUS, ILL, FPE) are forced on init anyway and must keep the default action.
_SELF_SIGNALS = ("SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTERM", "SIGXCPU",
                 "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR")  # fmt: skip


_IN_TEST = False  # set in the test child; the zygote (which installs the handlers) is not


def _died_by(signum: int, frame: object) -> None:
    """What the default action would have done: end the program, reported as that signal."""
    if not _IN_TEST:
        os._exit(128 + signum)
    try:
        os.write(3, b'{"signal": %d}' % signum)
    finally:
        os._exit(0)


def self_signal_handlers() -> None:
    """Once, in the zygote (every test child inherits them): see _SELF_SIGNALS."""
    for name in _SELF_SIGNALS:
        signal.signal(getattr(signal, name), _died_by)


def _input(prompt: object = "") -> str:
    """The builtin input() on a stdin that is not a terminal (a test's always is not), less
    its flush of stdout before each read: a judge with every input given up front has no
    use for it, and the official harnesses' stdout (a StringIO) pays nothing for it, while
    ours paid a write per line (a read-print loop over 100k lines: ~0.3 s). What the
    program printed, and in what order, is unchanged."""
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    if prompt:
        sys.stdout.write(str(prompt))
    line = sys.stdin.readline()
    if not isinstance(line, str):
        raise TypeError("object.readline() returned non-string")
    if not line:
        raise EOFError("EOF when reading a line")
    return line[:-1] if line[-1] == "\n" else line


def prelude_globals(preludes: dict) -> dict:
    """Once, in the zygote, before any program exists: the module globals each prelude makes,
    for stdin programs (`__main__`) and call-based ones (`solution`), keyed (prelude, call).
    A test child runs its program in its own copy-on-write copy of one of them, so no prelude
    runs per test (the LCB one binds hundreds of names, about 0.5 ms a test with page faults)."""
    builtins.input = _input  # (before the preludes: lcb's `from builtins import *` binds it)
    out: dict[tuple[str, bool], dict[str, Any]] = {}
    for name, code in preludes.items():
        for call in (False, True):
            g: dict[str, Any] = {
                "__name__": "solution" if call else "__main__",
                "__builtins__": builtins,
            }
            exec(code, g)
            if name == "apps":
                g["np"] = LazyNumpy()
            out[name, call] = g
    return out


_STREAMS: tuple | None = None  # see std_streams


def std_streams() -> tuple:
    """sys.stdin, sys.stdout and sys.stderr as a program sees them: text files on fds 0-2.
    Made once, in the zygote, where they are never used (each test child puts its own files
    on fds 0-2 before its program runs): building them costs a test about 0.4 ms of codec
    look-ups, buffers and page faults."""
    global _STREAMS
    _STREAMS = (
        open(0, encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False),
        open(1, "w", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False),
        open(2, "w", encoding="utf-8", errors="backslashreplace", newline="\n", closefd=False,
             buffering=1),
    )  # fmt: skip
    return _STREAMS


def _bind_streams(streams: tuple) -> None:
    """The program's streams as sys.std* and as the "original" sys.__std*__ alike."""
    sys.stdin, sys.stdout, sys.stderr = streams
    # (typeshed marks sys.__std*__ Final; at run time they are plain, writable attributes)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]


def run_child(spec: dict, globals_by: dict, fds: dict, iso: dict) -> None:
    """The forked test child: isolate, then run the program in this same process. Where the
    kernel allows it is pid 1 of its own pid namespace, so everything it starts dies with it.
    It loads the code object the server compiled once per program (from its memfd), runs it,
    reports on fd 3 and `_exit`s; the zygote reaps it. Never returns. `iso`: what to set up
    (see harness.Server.setup and zygote.zygote_main)."""
    try:
        os.setpgid(0, 0)
        if not iso.get("zygote_is_init"):  # (an init's death takes its whole namespace along)
            nsutil.prctl(nsutil.PR_SET_PDEATHSIG, signal.SIGKILL)
        if iso.get("scratch_ready"):  # the zygote's fresh scratch tmpfs (see reset_scratch)
            if not iso.get("denied"):
                nsutil.check(nsutil.unshare(nsutil.CLONE_NEWIPC), "unshare ipc")
        elif iso["private"]:
            private_mounts(iso, spec["scratch_bytes"])
        if not iso.get("denied"):
            if iso["userns"]:  # own keyrings (the user keyring is per user namespace)
                nsutil.prctl(nsutil.PR_SET_DUMPABLE, 1)  # /proc/self/*_map are root's otherwise
                nsutil.check(nsutil.unshare(nsutil.CLONE_NEWUSER), "unshare user")
                nsutil.map_ids(os.getuid(), os.getgid())
                nsutil.prctl(nsutil.PR_SET_DUMPABLE, 0)
                # a new user namespace starts with a full bounding set: empty it again
                if not nsutil.drop_bounding_set():
                    raise OSError("cannot empty the bounding set in the test's user namespace")
            nsutil.new_session_keyring()
        if not iso.get("bounded"):
            nsutil.drop_bounding_set()
        nsutil.clear_capabilities(nnp_inherited=iso.get("nnp", False))
        os.chdir(spec["scratch"])
        # (source, code object, wrapped), compiled once per program by the server
        source, code, wrapped = marshal.loads(_read_all(fds["code"]))
        os.close(fds["code"])
        in_fd, writers = fds["input"], [fds["out"], fds["err"], fds["status"]]
        raw = b""
        if spec["mode"] == "call":
            raw = _read_all(in_fd)
            in_fd = os.open(os.devnull, os.O_RDWR)
            writers[0] = in_fd
        os.dup2(in_fd, 0)
        for target, fd in zip((1, 2, 3), writers, strict=True):
            os.dup2(fd, target)
        # the ready pipe, written once set-up is done and closed before any program code
        os.dup2(fds["ready"], 4)
        if "ctl" in fds:  # a reused child's control socket (warm.py)
            os.dup2(fds["ctl"], warm.CTL_FD)
        os.closerange(warm.CTL_FD + ("ctl" in fds), 1 << 16)
    except BaseException as exc:
        _setup_failed(fds["err"], exc)
    try:
        limit = max(1, int(-(-spec["time_s"] // 1)))
        # SIGXCPU at the soft limit (a clear TLE); raising it to the hard one buys nothing: the
        # judge compares the whole tree's CPU with time_s, and the server kills past it.
        # (a reused child: the server moves the soft limit with each test, warm.WarmChild)
        hard = resource.RLIM_INFINITY if "ctl" in fds else limit + 1
        resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
        # (plus what the zygote preloaded, numpy: not the program's; serversetup._preloaded)
        as_bytes = spec["mem_bytes"] + int(spec.get("as_extra") or 0)
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize_bytes"], spec["fsize_bytes"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # few descriptors: pipes and sockets each pin kernel memory no limit counts
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
        if iso.get("filtered") and not seccomp.install(iso["filter"]):
            raise OSError("cannot install the test's seccomp filter")
        global _IN_TEST
        _IN_TEST = True
        _bind_streams(_STREAMS or std_streams())
        sys.argv = ["solution.py"]
        # (random was reseeded by its own at-fork hook, as in a fresh interpreter)
        prog = dict(spec, code=code, wrapped=bool(wrapped), source=source, warm="ctl" in fds)
        os.write(4, READY)  # from here on every exit status is the program's own
        os.close(4)  # (so no program can write, or unwrite, READY)
    except BaseException:
        os._exit(SETUP_FAILED)
    _run_program(prog, raw, globals_by)


def _setup_failed(err_fd: int, exc: BaseException) -> None:
    """Say why on the stderr pipe (the verifier shows it), exit SETUP_FAILED without READY."""
    try:
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        os.write(
            err_fd,
            f"sandbox set-up failed: {type(exc).__name__}: {exc} (line {where.lineno})\n".encode(),
        )
    finally:
        os._exit(SETUP_FAILED)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _run_program(prog: dict, raw: bytes, globals_by: dict) -> None:
    """Run the program the way the official harness would, report on fd 3; then exit, or, in
    a reused child (warm.py), run the next test of the same program in fresh globals."""
    call = prog["mode"] == "call"
    g = globals_by[prog["prelude"], call]  # this process's own copy (see prelude_globals)
    pristine = dict(g) if prog["warm"] else None
    fresh = Fresh() if prog["warm"] else None  # what each later test must start from
    while True:
        status = _run_once(prog, raw, g)
        again = pristine is not None and warm.reusable(status, MEMORY_ERROR)
        if not again:
            _threads_exit()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            os.write(3, status)
        except BaseException:
            pass
        if (
            not again
            or pristine is None
            or fresh is None
            or not fresh.release(g, (warm.CTL_FD,), NOFILE)
        ):
            os._exit(0)
        raw = warm.next_test(call)
        g = dict(pristine)
        os.chdir(prog["scratch"])
        if "random" in sys.modules:  # a fresh seed per test, as the at-fork hook gives one
            sys.modules["random"].seed()
        _bind_streams(std_streams())
        sys.argv = ["solution.py"]


def _threads_exit() -> None:
    """Like interpreter exit: wait for non-daemon threads (the common
    `Thread(target=main).start()` trick for deep recursion)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass


def _run_once(prog: dict, raw: bytes, g: dict) -> bytes:
    """One test: the program's status (what fd 3 gets)."""
    dumps = json.dumps
    call = prog["mode"] == "call"
    try:
        if prog["prelude"] in RECURSION_LIMITS:
            sys.setrecursionlimit(RECURSION_LIMITS[prog["prelude"]])
        if prog["prelude"] == "apps" and not call:
            g["stdin"], g["stdout"], g["open"] = sys.stdin, sys.stdout, _apps_open
        args = json.loads(raw) if call else None
        # what the prelude bound under the entry point's name (lcb's `from operator import *`
        # binds `add`): a program that defines nothing must not be scored by calling it
        inherited = g.get(prog["fn_name"]) if call else None
        exec(prog["code"], g)
        if prog["wrapped"]:
            g[WRAPPED]()
        if call:
            value = _call(g, prog, args if isinstance(args, list) else [args], inherited)
            return dumps({"value": encode_value(value)}).encode()
        return b'{"ok": true}'
    except SystemExit as exc:
        code = exc.code
        if isinstance(code, str):
            sys.stderr.write(code + "\n")
        return dumps({"sysexit": code if isinstance(code, int) else int(code is not None)}).encode()
    except MemoryError:
        return MEMORY_ERROR
    except BaseException as exc:  # the program's own failure: a runtime error
        try:
            import traceback

            traceback.print_exc(limit=-8)
            return dumps({"exc": type(exc).__name__}).encode()
        except BaseException:
            return b'{"exc": "Exception"}'


def _call(g: dict, prog: dict, args: list, inherited: object = None):
    name = prog["fn_name"]
    fn = None
    if "class Solution" in prog["source"] and isinstance(g.get("Solution"), type):
        fn = getattr(g["Solution"](), name, None)  # LeetCode: a method of Solution()
    if fn is None:
        fn = g.get(name)
    if fn is None or (inherited is not None and fn is inherited):
        raise NameError(f"the solution defines no {name!r}")
    if prog.get("int_keys") and args and isinstance(args[0], dict):
        try:  # APPS: JSON forced string keys on a dict argument; undo it where possible
            args = [{int(k): v for k, v in args[0].items()}] + list(args[1:])
        except (TypeError, ValueError):
            pass
    return fn(*args)
