"""The slowest honest baseline of verifier_throughput.py: a fresh `python3` per test.

The real interpreter binary (no shim), output judged with the same checker. Call-based rows
get a small driver that calls the function on stdin's JSON arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from cppo_bench.verifier import VerifyJob, extract_code, get_checker

PYTHON = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)

DRIVER = """
import json as _json, sys as _sys
_args = _json.loads(_sys.stdin.read())
_obj = Solution() if "class Solution" in _SOURCE else None
_fn = getattr(_obj, {fn!r}, None) or globals()[{fn!r}]
_out = _fn(*_args)
print(_json.dumps(list(_out) if isinstance(_out, tuple) else _out))
"""


def naive_one(job: VerifyJob, workdir: str) -> tuple[int, int]:
    """(tests run, tests passed) with a fresh interpreter per test."""
    code = extract_code(job.code) or ""
    call = job.problem.modes == {"call"}
    if call:  # the typing names LeetCode signatures use, and the driver
        code = f"from typing import *\n_SOURCE = {code!r}\n{code}\n" + DRIVER.format(
            fn=job.problem.fn_name
        )
    fd, path = tempfile.mkstemp(suffix=".py", dir=workdir)
    with os.fdopen(fd, "w") as f:
        f.write(code)
    checker, passed = get_checker(job.problem.checker), 0
    try:
        for test in job.problem.tests:
            try:
                proc = subprocess.run([PYTHON, path], input=test.input.encode(),
                                      capture_output=True, timeout=10)  # fmt: skip
                out = proc.stdout.decode("utf-8", "replace")
                ok = proc.returncode == 0 and (
                    checker.call(json.loads(out), json.loads(test.output))
                    if call
                    else checker.stdin(out, test.output)
                )
            except (subprocess.TimeoutExpired, ValueError):
                ok = False
            passed += ok
    finally:
        os.unlink(path)
    return len(job.problem.tests), passed


def run_naive(jobs: list[VerifyJob], workers: int) -> tuple[float, int, int]:
    """(seconds, tests run, tests passed)."""
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(workers) as pool:
        start = time.perf_counter()
        counts = list(pool.map(lambda j: naive_one(j, workdir), jobs))
        elapsed = time.perf_counter() - start
    return elapsed, sum(c[0] for c in counts), sum(c[1] for c in counts)
