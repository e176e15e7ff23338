"""Run a program on inputs in the verifier's sandbox and keep what it printed (or returned).

The verifier judges a program against expected outputs; making tests needs the outputs
themselves. This module drives the verifier's own Sandbox (the same isolation, limits and
preludes as `verify_batch`, through `runner.program_spec` and `runner.judge`, so a run
that the verifier would call TLE/RE/MLE is one here too) and returns each run's output.
Nothing is ever executed in this process.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from cppo_bench.problem import Problem, Test
from cppo_bench.verifier import Limits, SandboxError, extract_code, get_checker
from cppo_bench.verifier.decode import decode_value, parse_status
from cppo_bench.verifier.pool import sandbox_count
from cppo_bench.verifier.runner import READY, judge, program_spec
from cppo_bench.verifier.sandbox import Sandbox


@dataclass(frozen=True)
class Outcome:
    """One run: ok with its output (stdin: the text printed; call: the JSON of the value
    returned), or not ok with the verdict (TLE, RE, MLE, CE, WA for an over-long output)."""

    ok: bool
    output: str | None
    verdict: str
    detail: str = ""
    cpu_s: float = 0.0


@dataclass(frozen=True)
class ExecJob:
    problem: Problem  # its mode, fn_name, checker (preludes) and limits apply
    code: str
    inputs: tuple[str, ...]


def _outcome(box: Sandbox, problem: Problem, data: str, limits: Limits) -> Outcome:
    checker = get_checker(problem.checker)
    run = box.run_test(data.encode("utf-8", "surrogatepass"), limits.wall_s + 30)
    mode = problem.tests[0].mode
    if mode == "stdin":
        output = run.stdout.decode("utf-8", "replace")
    else:
        raw = run.status[len(READY) :] if run.status.startswith(READY) else b""
        status = parse_status(raw)
        if "value" not in status:
            output = None
        else:
            try:
                output = json.dumps(decode_value(status["value"]))
            except (TypeError, ValueError):
                return Outcome(False, None, "RE", "returned a value JSON cannot hold", run.cpu_s)
    # the verifier's own verdict on this run, with its output as the expected one: anything
    # but AC is a failure of the run itself (limits, crash, exit code)
    expected = output if output is not None else "null"
    verdict, why = judge(run, Test(data, expected, mode, problem.fn_name), checker, limits)
    if verdict != "AC" or output is None:
        return Outcome(False, None, verdict if verdict != "AC" else "RE", why, run.cpu_s)
    return Outcome(True, output, "AC", "", run.cpu_s)


def run_program(box: Sandbox, job: ExecJob, limits: Limits) -> list[Outcome]:
    lim = limits.for_problem(job.problem)
    code = extract_code(job.code)
    if code is None:
        return [Outcome(False, None, "EMPTY", "no code")] * len(job.inputs)
    spec = program_spec(job.problem, get_checker(job.problem.checker), lim)
    error = box.load(spec, code)
    if error is not None:
        return [Outcome(False, None, "CE", str(error)[:200])] * len(job.inputs)
    try:
        return [_outcome(box, job.problem, data, lim) for data in job.inputs]
    finally:
        if box.proc is not None:
            box.end()


def run_batch(
    jobs: Sequence[ExecJob], *, workers: int = 1, limits: Limits | None = None
) -> list[list[Outcome]]:
    """Outcomes per job per input, in order; `workers` sandboxes in parallel, as many as the
    verifier's batches allow (`sandbox_count`: never more than the CPUs or the jobs). A
    sandbox that fails mid-job is restarted once; a job it fails twice gets RE outcomes."""
    limits = limits or Limits()
    results: list[list[Outcome] | None] = [None] * len(jobs)
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(jobs)):
        todo.put(i)

    def work() -> None:
        box = Sandbox()
        try:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                results[i] = _with_retry(box, jobs[i], limits)
        finally:
            box.close()

    n = sandbox_count(workers, len(jobs))
    threads = [threading.Thread(target=work, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise SandboxError(f"no sandbox could run {len(missing)} program(s)")
    return results  # type: ignore[return-value]


def _with_retry(box: Sandbox, job: ExecJob, limits: Limits) -> list[Outcome]:
    failure = ""
    for _ in range(2):
        if box.proc is None:
            box.start()
        try:
            return run_program(box, job, limits)
        except SandboxError as exc:
            failure = str(exc)[:200]
            box.kill()
    return [Outcome(False, None, "RE", f"sandbox failure: {failure}")] * len(job.inputs)


def agree(problem: Problem, a: str, b: str) -> bool:
    """Outputs a and b are the same answer under the benchmark's own comparison rule."""
    checker = get_checker(problem.checker)
    if problem.tests[0].mode == "stdin":
        return bool(checker.stdin(a, b))
    return bool(checker.call(json.loads(a), json.loads(b)))
