"""The unisolated baselines of verifier_throughput.py: programs exec'd in-process, no sandbox.

Both follow the execution model of the official LiveCodeBench/APPS evaluators (written here
in our own words): every program gets one forked process of its own (so a crash or a hang
cannot take the evaluator down), compiled once there (stdin programs wrapped in a function,
imports hoisted), and each test runs in that same process: stdin and stdout swapped for
in-memory files, the benchmark's prelude names, a SIGALRM timer for the time limit,
SystemExit caught, the output judged right there with the verifier's own checker. Nothing
is isolated: a test sees what the earlier tests of its program left in memory, and every
program can read and write the whole machine.
  - official: as the official evaluator spends it: a multiprocessing.Manager (a server
    process) per program for the result, unittest.mock patches of open() and sys.stdin per
    test, faulthandler on around each test;
  - lean: the same model without those costs (a pipe per program, plain in-memory files):
    the hardest in-process baseline we could write.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import faulthandler
import io
import json
import multiprocessing
import os
import resource
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any
from unittest import mock

import cppo_bench.verifier.inside
from cppo_bench.verifier import VerifyJob, extract_code, get_checker
from cppo_bench.verifier.cpus import process_cpus
from cppo_bench.verifier.records import Limits

# The sandbox-side modules import their siblings by plain name (they run as a script there).
sys.path.insert(0, os.path.dirname(cppo_bench.verifier.inside.__file__))
from child import PRELUDES, RECURSION_LIMITS  # noqa: E402
from programs import WRAPPED, compile_program  # noqa: E402

del sys.path[0]

_FORK = multiprocessing.get_context("fork")


class _Timeout(BaseException):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout


def _lean_patches(data: bytes, g: dict) -> contextlib.ExitStack:
    """stdin as an in-memory file; every open() (e.g. open(0)) reads the test input, as the
    official harnesses arrange with a mock."""

    def opener(*args, **kwargs):
        mode = str(args[1] if len(args) > 1 else kwargs.get("mode", "r"))
        return io.BytesIO(data) if "b" in mode else io.TextIOWrapper(io.BytesIO(data))

    stack = contextlib.ExitStack()
    real_stdin, real_open = sys.stdin, builtins.open
    sys.stdin, builtins.open, g["open"] = io.TextIOWrapper(io.BytesIO(data)), opener, opener

    def restore() -> None:
        sys.stdin, builtins.open = real_stdin, real_open

    stack.callback(restore)
    return stack


def _official_patches(data: bytes) -> contextlib.ExitStack:
    """The official evaluator's way, per test: unittest.mock patches of open() (mock_open
    holding the input), of sys.stdin and of its readline/readlines/read."""
    text = data.decode("utf-8", "replace")
    lines = iter(text.split("\n"))
    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch("builtins.open", mock.mock_open(read_data=text)))
    stack.enter_context(mock.patch("sys.stdin", io.StringIO(text)))
    stack.enter_context(mock.patch("sys.stdin.readline", lambda *a: next(lines)))
    stack.enter_context(mock.patch("sys.stdin.readlines", lambda *a: text.split("\n")))
    stack.enter_context(mock.patch("sys.stdin.read", lambda *a: text))
    return stack


def _run_tests(job: VerifyJob, time_s: float, mem_bytes: int, official: bool) -> int:
    """In the program's own process: how many of its tests pass."""
    problem = job.problem
    checker = get_checker(problem.checker)
    call = problem.modes == {"call"}
    code = extract_code(job.code) or ""
    obj, wrapped = (None, False) if call else _wrapped(code)
    if obj is None:  # call-based, or no wrapper possible: the program as a module
        obj, wrapped = compile_program(code, "call" if call else "stdin")
    if obj is None:
        return 0
    with open("/proc/self/statm") as f:  # the program's memory on top of the evaluator's
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (mapped + mem_bytes, mapped + mem_bytes))
    prelude_name = checker.call_prelude if call else checker.stdin_prelude
    template: dict = {"__builtins__": builtins}
    exec(compile(PRELUDES[prelude_name], "<prelude>", "exec"), template)
    if prelude_name in RECURSION_LIMITS:  # as the official harness's prelude does
        sys.setrecursionlimit(RECURSION_LIMITS[prelude_name])
    signal.signal(signal.SIGALRM, _alarm)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # a program reading fd 0 directly gets EOF, not the evaluator's stdin
    real_stdout, real_stderr = sys.stdout, sys.stderr
    passed = 0
    for test in problem.tests:
        g = dict(template, __name__="solution" if call else "__main__")
        data = b"" if call else test.input.encode()
        out = io.BytesIO()
        sys.stdout = wrapper = io.TextIOWrapper(out, encoding="utf-8", newline="\n")
        sys.stderr = io.StringIO()  # a program's debug prints, kept off the report
        patches = _official_patches(data) if official else _lean_patches(data, g)
        if official:
            faulthandler.enable(file=real_stderr)
        signal.setitimer(signal.ITIMER_REAL, time_s)
        ok, value = True, None
        try:
            with patches:
                exec(obj, g)
                if wrapped:
                    g[WRAPPED]()
            if call:
                name = problem.fn_name or ""  # (a call-mode problem names its function)
                fn: Any = g.get(name)  # (None: the call below fails the test)
                if "class Solution" in code and isinstance(g.get("Solution"), type):
                    fn = getattr(g["Solution"](), name, fn)
                args = json.loads(test.input)
                value = fn(*(args if isinstance(args, list) else [args]))
        except SystemExit:
            pass
        except BaseException:
            ok = False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if official:
                faulthandler.disable()
            try:
                wrapper.flush()
                output = out.getvalue()  # before the wrapper is collected (it closes `out`)
            except BaseException:
                ok = False
            sys.stdout, sys.stderr = real_stdout, real_stderr
        if not ok:
            continue
        try:
            if call:
                value = list(value) if isinstance(value, tuple) else value
                passed += bool(checker.call(value, json.loads(test.output)))
            else:
                passed += bool(checker.stdin(output.decode("utf-8", "replace"),
                                             test.output))  # fmt: skip
        except Exception:
            pass
    return passed


def _wrapped(code: str):
    """As the official evaluators do for stdin programs: the imports hoisted, everything else
    inside one function that each test calls (its locals die with the call)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, False
    imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    rest = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    fn = ast.parse(f"def {WRAPPED}():\n    pass\n").body[0]
    assert isinstance(fn, ast.FunctionDef)  # (the line above parses to one def)
    fn.body = rest or [ast.Pass()]
    module = ast.fix_missing_locations(ast.Module(body=imports + [fn], type_ignores=[]))
    try:
        return compile(module, "<solution>", "exec"), True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, False


def _child(job: VerifyJob, time_s: float, mem_bytes: int, official: bool, sink) -> None:
    try:
        passed = _run_tests(job, time_s, mem_bytes, official)
        if official:
            sink.append(passed)
        else:
            sink.send(passed)
    finally:
        os._exit(0)


def run_program(job: VerifyJob, time_s: float, mem_bytes: int, official: bool = False) -> int:
    """Tests passed by one program, in a fresh forked process (0 if it dies or hangs). The
    official model reports through a multiprocessing.Manager list (a server process per
    program); the lean one through a pipe."""
    deadline = (time_s + 1) * len(job.problem.tests) + 5  # the official global backstop
    if official:
        with _FORK.Manager() as manager:
            sink = manager.list()
            proc = _FORK.Process(target=_child, args=(job, time_s, mem_bytes, True, sink))
            proc.start()
            proc.join(deadline)
            proc.kill()
            proc.join()
            return sink[0] if len(sink) else 0
    ours, theirs = _FORK.Pipe(duplex=False)
    proc = _FORK.Process(target=_child, args=(job, time_s, mem_bytes, False, theirs))
    proc.start()
    theirs.close()
    passed = ours.recv() if ours.poll(deadline) else 0
    proc.kill()
    proc.join()
    ours.close()
    return passed


def _one(args: tuple[VerifyJob, bool]) -> int:
    job, official = args
    lim = Limits().for_problem(job.problem)
    return run_program(job, lim.time_s, lim.memory_mb << 20, official)


def _bind(cpus) -> None:
    """Pool worker initializer: this worker (and the program processes it forks) on one CPU."""
    os.sched_setaffinity(0, {cpus.get()})


def run_inprocess(
    jobs: list[VerifyJob], workers: int, official: bool = False, pin: bool = True
) -> tuple[int, int]:
    """(tests run, tests passed) over all jobs, `workers` programs at a time, under the
    verifier's default limits (the study's: 10 s, 256 MiB) or the problem's own. Like the
    official evaluator: a pool of worker processes (forking from a threaded parent could
    deadlock the child), each forking one process per program. pin: each worker bound to a
    CPU of its own, as the verifier binds each sandbox (the official evaluator does not;
    binding makes the official model ~10 % faster here, so the comparison is the harder one)."""
    kwargs: dict = {}
    if pin and hasattr(os, "sched_getaffinity"):
        allowed = process_cpus()
        cpus = _FORK.Queue()
        for i in range(workers):
            cpus.put(allowed[i % len(allowed)])
        kwargs = {"initializer": _bind, "initargs": (cpus,)}
    with ProcessPoolExecutor(workers, mp_context=_FORK, **kwargs) as pool:
        passed = list(pool.map(_one, [(j, official) for j in jobs], chunksize=1))
    return sum(len(j.problem.tests) for j in jobs), sum(passed)
