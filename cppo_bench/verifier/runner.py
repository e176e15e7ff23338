"""Verify one program on one problem with a running sandbox, and judge each test's run.

Judging happens here, outside the sandbox: only here are the expected outputs known. Under
`all_tests` a program's tests run first (execute) and are judged after (judge_ran), so
nothing a program can time waits on a verdict; pool.py judges a call's programs only once
all of them have run. `judge` is the one door from an output to its verdict (total).
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field

from cppo_bench.problem import Problem, Test
from cppo_bench.verifier.compare import Checker, get_checker
from cppo_bench.verifier.decode import MAX_NODES, decode_value, node_cap, parse_status, short_repr
from cppo_bench.verifier.held import HeldRun, Spool
from cppo_bench.verifier.records import Limits, VerifyResult
from cppo_bench.verifier.sandbox import Sandbox, SandboxError, TestRun

DETAIL_CHARS = 400  # a verdict's reason: two clipped texts and the words around them
READY = b"R"  # child.READY: the server puts it before the status once the set-up succeeded


def program_spec(problem: Problem, checker: Checker, limits: Limits) -> dict:
    mode = problem.tests[0].mode
    return {
        "mode": mode,
        "fn_name": problem.fn_name,
        "prelude": checker.stdin_prelude if mode == "stdin" else checker.call_prelude,
        "int_keys": checker.int_keys,
        "time_s": limits.time_s,
        "wall_s": limits.wall_s,
        "mem_bytes": limits.memory_mb << 20,
        "out_bytes": limits.output_mb << 20,
        "fsize_bytes": limits.file_mb << 20,
        "scratch_bytes": limits.file_mb << 20,
        "tests": len(problem.tests),  # (one test: no child is kept for a next one)
    }


@dataclass
class Ran:
    """A program whose tests all ran and wait to be judged (`all_tests`): the raw runs
    only, nothing about their verdicts (see execute)."""

    problem: Problem
    code: str
    limits: Limits
    label: str
    error: str | None = None  # the compile error (CE): no test ran
    runs: list[HeldRun] = field(default_factory=list)


def run_job(
    box: Sandbox, problem: Problem, code: str, limits: Limits, all_tests: bool
) -> VerifyResult:
    """Run `code` on the problem's tests in order; stop at the first failure unless
    `all_tests` (then every test runs before any is judged). Raises SandboxError when the
    sandbox itself fails."""
    if all_tests:
        spool = Spool()
        try:
            return judge_ran(execute(box, problem, code, limits, spool))
        finally:
            spool.close()
    checker = get_checker(problem.checker)
    total = len(problem.tests)
    error = box.load(program_spec(problem, checker, limits), code)
    if error is not None:
        return VerifyResult("CE", False, 0, total, 0, 0.0, None, error, code, sandbox=box.label)
    judged: list[Judged] = []
    try:
        for test in problem.tests:
            judged.append(_judged(run_one_test(box, test, limits), test, checker, limits))
            if judged[-1][3] != "AC":
                break
    finally:
        if box.proc is not None:
            box.end()
    return _result(problem, code, box.label, judged)


def execute(box: Sandbox, problem: Problem, code: str, limits: Limits, spool: Spool) -> Ran:
    """Run every test of `code`, back to back, judging none: what the host does between two
    tests (and before the next program) is the same whatever the outputs are worth, so no
    verdict shows in anything a program can time. Only a sandbox fault (a test child that
    could not set up, which no program can cause) stops it: SandboxError."""
    checker = get_checker(problem.checker)
    ran = Ran(problem, code, limits, box.label)
    ran.error = box.load(program_spec(problem, checker, limits), code)
    if ran.error is not None:
        return ran
    try:
        for test in problem.tests:
            ran.runs.append(spool.hold(run_one_test(box, test, limits)))
    finally:
        if box.proc is not None:
            box.end()
    return ran


def run_one_test(box: Sandbox, test: Test, limits: Limits) -> TestRun:
    run = box.run_test(test.input.encode("utf-8", "surrogatepass"), limits.wall_s + 30)
    if setup_failed(run, limits):
        # The harness writes READY just before the program runs: without it, the set-up
        # failed (a sandbox fault), whatever the exit status says.
        raise SandboxError(
            f"a test child could not set up its isolation ({_last_line(run.stderr)})"
        )
    return run


def judge_ran(ran: Ran) -> VerifyResult:
    """The verdict of a program whose tests all ran (execute); never raises on anything the
    program produced (judge)."""
    total = len(ran.problem.tests)
    if ran.error is not None:
        return VerifyResult("CE", False, 0, total, 0, 0.0, None, ran.error, ran.code,
                            sandbox=ran.label)  # fmt: skip
    checker = get_checker(ran.problem.checker)
    judged = [_judged(held.load(), test, checker, ran.limits)
              for test, held in zip(ran.problem.tests, ran.runs, strict=False)]  # fmt: skip
    return _result(ran.problem, ran.code, ran.label, judged)


# (wall_s, cpu_s, maxrss_kb, verdict, why) of one test: its outputs need not be kept
Judged = tuple[float, float, int, str, str]


def _judged(run: TestRun, test: Test, checker: Checker, limits: Limits) -> Judged:
    return (run.wall_s, run.cpu_s, run.maxrss_kb, *judge(run, test, checker, limits))


def _result(problem: Problem, code: str, label: str, judged: list[Judged]) -> VerifyResult:
    """The verdict over the problem's first len(judged) tests."""
    passed, first, verdict, detail = 0, None, "AC", ""
    for index, (_, _, _, outcome, why) in enumerate(judged):
        if outcome == "AC":
            passed += 1
        elif first is None:
            first, verdict, detail = index, outcome, f"test {index}: {why}"
    peak = max((j[2] for j in judged), default=0)
    return VerifyResult(
        verdict=verdict,
        passed=verdict == "AC",
        tests_passed=passed,
        tests_total=len(problem.tests),
        first_failed=first,
        time_s=round(sum(j[0] for j in judged), 6),
        peak_memory_mb=round(peak / 1024, 2) if peak else None,
        detail=detail,
        code=code,
        cpu_s=round(sum(j[1] for j in judged), 6),
        sandbox=label,
    )


def setup_failed(run: TestRun, limits: Limits) -> bool:
    """No READY from the test child, and no limit that explains it (judge's order): the
    sandbox failed to set the test up. A fact of the run, not of its output's worth."""
    if run.status.startswith(READY) or run.timed_out or run.mem_exceeded or run.truncated:
        return False
    code = run.exit_code
    return not (run.cpu_exceeded or run.cpu_s > limits.time_s or code == -signal.SIGXCPU
                or (code == -signal.SIGKILL and run.cpu_s >= 0.95 * limits.time_s))  # fmt: skip


def judge(run: TestRun, test: Test, checker: Checker, limits: Limits) -> tuple[str, str]:
    """(verdict, reason) for one test run: the one door from a program's output to its
    verdict, and total on whatever the program produced (a value whose repr raises, a
    comparison that overflows or runs out of memory): an output that cannot be judged is a
    wrong one (WA), never an error that kills the sandbox or skips the program's other
    tests. Raises only SandboxError, for a test the sandbox failed to set up."""
    try:
        verdict, why = _judge(run, test, checker, limits)
        return verdict, why[:DETAIL_CHARS]
    except SandboxError:
        raise
    except Exception as exc:  # noqa: BLE001  (the class, closed here for every caller)
        return "WA", f"the output could not be compared ({type(exc).__name__})"


def _judge(run: TestRun, test: Test, checker: Checker, limits: Limits) -> tuple[str, str]:
    if run.timed_out:
        return "TLE", f"wall-clock backstop of {limits.wall_s:g}s exceeded"
    ready = run.status.startswith(READY)
    cap = node_cap(test.output) if test.mode == "call" else MAX_NODES
    status = parse_status(run.status[len(READY) :], cap) if ready else {}
    exit_code = _exit_code(run, status)
    # SIGXCPU: RLIMIT_CPU's soft limit; SIGKILL near the limit: its hard limit (soft + 1 s).
    cpu_killed = (
        run.cpu_exceeded
        or exit_code == -signal.SIGXCPU
        or (exit_code == -signal.SIGKILL and run.cpu_s >= 0.95 * limits.time_s)
    )
    if run.cpu_s > limits.time_s or cpu_killed:
        return "TLE", f"CPU time limit of {limits.time_s:g}s exceeded"
    if run.mem_exceeded:
        return "MLE", f"the program's processes together exceeded {limits.memory_mb} MiB"
    if run.truncated:
        return "WA", f"output exceeded {limits.output_mb} MiB and was cut off"
    if not ready:  # (setup_failed: a sandbox fault, whatever the exit status says)
        raise SandboxError(
            f"a test child could not set up its isolation ({_last_line(run.stderr)})"
        )
    if status.get("exc") == "MemoryError":
        return "MLE", f"MemoryError (address space limit {limits.memory_mb} MiB)"
    if exit_code < 0:
        return "RE", f"killed by {_signal_name(-exit_code)}"
    if "exc" in status:
        return "RE", _last_line(run.stderr) or short_repr(status["exc"])
    code = status.get("sysexit", 0)
    if code and not checker.sysexit_ok:
        return "RE", f"exit code {short_repr(code)}"
    if exit_code != 0:
        return "RE", f"exit code {exit_code}"
    if test.mode == "stdin":
        output = run.stdout.decode("utf-8", "replace")
        if checker.stdin(output, test.output):
            return "AC", ""
        return "WA", f"expected {_short(test.output)}, got {_short(output)}"
    if "value" not in status:
        return "RE", "the function returned no value (the program exited)"
    value = decode_value(status["value"])
    if checker.call(value, json.loads(test.output)):
        return "AC", ""
    return "WA", f"expected {_short(test.output)}, got {_short(short_repr(value))}"


def _exit_code(run: TestRun, status: dict) -> int:
    """The wait status as an exit code; negative: killed by that signal. A program that is its
    pid namespace's init cannot die by a signal it sends itself: the child reports the
    signal on the status fd instead (`{"signal": N}`, then exit 0). `status`: the parsed
    report ({} when the set-up never finished)."""
    if run.exit_code != 0:
        return run.exit_code
    sig = status.get("signal")
    return -sig if type(sig) is int and 0 < sig < 65 else 0


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _short(text: str, width: int = 60) -> str:
    text = text[: 4 * width].strip()  # never copy a huge output to show its start
    return repr(text if len(text) <= width else text[: width - 3] + "...")
