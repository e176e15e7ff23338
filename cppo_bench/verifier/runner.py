"""Verify one program on one problem with a running sandbox, and judge each test's run.

Judging happens here, outside the sandbox: only here are the expected outputs known.
"""

from __future__ import annotations

import json
import signal

from cppo_bench.problem import Problem, Test
from cppo_bench.verifier.compare import Checker, get_checker
from cppo_bench.verifier.decode import MAX_NODES, decode_value, node_cap, parse_status, short_repr
from cppo_bench.verifier.records import Limits, VerifyResult
from cppo_bench.verifier.sandbox import Sandbox, SandboxError, TestRun

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


def run_job(
    box: Sandbox, problem: Problem, code: str, limits: Limits, all_tests: bool
) -> VerifyResult:
    """Run `code` on the problem's tests in order; stop at the first failure unless
    `all_tests`. Raises SandboxError when the sandbox itself fails."""
    checker = get_checker(problem.checker)
    total = len(problem.tests)
    error = box.load(program_spec(problem, checker, limits), code)
    if error is not None:
        return VerifyResult("CE", False, 0, total, 0, 0.0, None, error, code, sandbox=box.label)
    passed, first, verdict, detail = 0, None, "AC", ""
    wall = cpu = 0.0
    peak = 0
    try:
        for index, test in enumerate(problem.tests):
            run = box.run_test(test.input.encode("utf-8", "surrogatepass"), limits.wall_s + 30)
            wall, cpu, peak = wall + run.wall_s, cpu + run.cpu_s, max(peak, run.maxrss_kb)
            outcome, why = judge(run, test, checker, limits)
            if outcome == "AC":
                passed += 1
                continue
            if first is None:
                first, verdict, detail = index, outcome, f"test {index}: {why}"
            if not all_tests:
                break
    finally:
        if box.proc is not None:
            box.end()
    return VerifyResult(
        verdict=verdict,
        passed=verdict == "AC",
        tests_passed=passed,
        tests_total=total,
        first_failed=first,
        time_s=round(wall, 6),
        peak_memory_mb=round(peak / 1024, 2) if peak else None,
        detail=detail,
        code=code,
        cpu_s=round(cpu, 6),
        sandbox=box.label,
    )


def judge(run: TestRun, test: Test, checker: Checker, limits: Limits) -> tuple[str, str]:
    """(verdict, reason) for one test run."""
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
    if not ready:
        # The harness writes READY just before the program runs: without it, the set-up
        # failed (a sandbox fault), whatever the exit status says.
        raise SandboxError(
            f"a test child could not set up its isolation ({_last_line(run.stderr)})"
        )
    if status.get("exc") == "MemoryError":
        return "MLE", f"MemoryError (address space limit {limits.memory_mb} MiB)"
    if exit_code < 0:
        return "RE", f"killed by {_signal_name(-exit_code)}"
    if "exc" in status:
        return "RE", _last_line(run.stderr) or str(status["exc"])
    code = status.get("sysexit", 0)
    if code and not checker.sysexit_ok:
        return "RE", f"exit code {code}"
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
