"""verify_batch end to end in the sandbox: verdicts, execution modes, limits, cache, threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import Limits, VerifyJob, VerifyResult, verify_batch
from cppo_bench.verifier import pool as pool_module
from cppo_bench.verifier.sandbox import Sandbox


def stdin_problem(pairs, checker="lcb", time_s=2.0, memory_mb=None, pid="p") -> Problem:
    tests = tuple(Case(i, o) for i, o in pairs)
    return Problem("t", pid, "", tests=tests, checker=checker, time_limit_s=time_s,
                   memory_limit_mb=memory_mb)  # fmt: skip


def call_problem(fn, pairs, checker="lcb") -> Problem:
    tests = tuple(Case(i, o, mode="call", fn_name=fn) for i, o in pairs)
    return Problem("t", fn, "", tests=tests, checker=checker, time_limit_s=2.0)


SUM = stdin_problem([("3 4\n", "7\n"), ("-1 1\n", "0\n"), ("10 5\n", "15\n")])


def one(problem: Problem, code: str, **kw) -> VerifyResult:
    return verify_batch([VerifyJob(problem, code)], workers=1, **kw)[0]


def children_of_this_process() -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                name = stat.split("(", 1)[1].rsplit(")", 1)[0]  # which process: a failure says
                out.append(f"{entry} state {fields[0]} ({name})")
    return out


def test_every_verdict(reuse) -> None:
    jobs = {
        "AC": "a, b = map(int, input().split())\nprint(a + b)",
        "WA": "print(0)",
        "TLE": "while True:\n    pass",
        "MLE": "x = bytearray(1 << 40)",
        "RE": "raise ValueError('boom')",
        "CE": "print(1",
        "EMPTY": "I could not solve it.",
    }
    problem = stdin_problem([("3 4\n", "7\n")], time_s=1.0)
    results = verify_batch([VerifyJob(problem, c) for c in jobs.values()], workers=2)
    assert [r.verdict for r in results] == list(jobs)
    assert [r.passed for r in results] == [True] + [False] * 6
    by = dict(zip(jobs, results, strict=True))
    assert "ValueError: boom" in by["RE"].detail
    assert "never closed" in by["CE"].detail or "SyntaxError" in by["CE"].detail
    assert by["EMPTY"].code is None and (by["AC"].code or "").startswith("a, b")
    assert by["AC"].peak_memory_mb and by["AC"].time_s > 0
    assert not children_of_this_process()  # every sandbox was reaped: no zombies


def test_real_file_descriptors_for_stdin_and_stdout_buffers(reuse) -> None:
    code = (
        "import sys\n"
        "a, b = map(int, sys.stdin.buffer.read().split())\n"
        "sys.stdout.buffer.write(b'%d\\n' % (a + b))\n"
    )
    assert one(SUM, code).verdict == "AC"


def test_stop_at_first_failure_unless_all_tests(reuse) -> None:
    code = "a, b = map(int, input().split())\nprint(a + b if a != -1 else 99)"
    first = one(SUM, code)
    assert (first.verdict, first.tests_passed, first.first_failed) == ("WA", 1, 1)
    every = one(SUM, code, all_tests=True)
    assert (every.verdict, every.tests_passed, every.first_failed, every.tests_total) == (
        "WA", 2, 1, 3)  # fmt: skip


def test_main_guard_and_sys_exit_zero(reuse) -> None:
    code = "import sys\ndef main():\n    print(7)\n    sys.exit(0)\nif __name__ == '__main__':\n    main()"
    assert one(stdin_problem([("", "7\n")]), code).verdict == "AC"


def test_call_mode_function_leetcode_class_and_prelude(reuse) -> None:
    problem = call_problem("twoSum", [("[[2, 7, 11], 9]", "[0, 1]"), ("[[3, 3], 6]", "[0, 1]")])
    leetcode = (
        "class Solution:\n"
        "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"  # List: prelude
        "        seen = {}\n"
        "        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n"
        "                return (seen[target - x], i)\n"  # a tuple is accepted as a list
        "            seen[x] = i\n"
    )
    function = "def twoSum(nums, target):\n    return [0, 1]"
    wrong = "def twoSum(nums, target):\n    return [1, 0]"
    results = verify_batch([VerifyJob(problem, c) for c in (leetcode, function, wrong)], workers=2)
    assert [r.verdict for r in results] == ["AC", "AC", "WA"]


def test_prelude_names_and_limits_are_fresh_in_every_test(reuse) -> None:
    """The preludes run once, in the zygote; each test gets its own copy of their names and
    its benchmark's recursion limit, whatever an earlier test did to them."""
    spoil = (
        "import collections, sys\ncollections.Counter = None\nCounter = deque = None\n"
        "sys.setrecursionlimit(100000)\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
    )
    lcb = call_problem("depth", [("[20000]", "20000")])  # the LCB harness allows 50000
    apps = stdin_problem([("", "")], checker="apps")  # APPS' harness keeps Python's 1000
    uses = "print(Counter('aab')['a'], deque([1]).pop(), __name__)"
    prints = stdin_problem([("", "2 1 __main__\n")], checker="apps")
    deep = "def d(n):\n    return 0 if n == 0 else 1 + d(n - 1)\nd(5000)"
    results = verify_batch(
        [VerifyJob(lcb, spoil), VerifyJob(prints, uses), VerifyJob(apps, deep),
         VerifyJob(call_problem("name", [("[]", '"solution"')]), "def name():\n    return __name__")],
        workers=1,
    )  # fmt: skip
    assert [r.verdict for r in results] == ["AC", "AC", "RE", "AC"], results
    assert "RecursionError" in results[2].detail


def test_every_test_draws_from_a_fresh_random_seed(reuse) -> None:
    """Every test child is a copy of the zygote's memory, random's state included: each must
    be reseeded (as a fresh interpreter is), or every test would draw the same numbers."""
    spec = {"mode": "stdin", "prelude": "lcb", "time_s": 5, "wall_s": 10, "mem_bytes": 512 << 20,
            "out_bytes": 1 << 20, "fsize_bytes": 1 << 20, "scratch_bytes": 1 << 20}  # fmt: skip
    box = Sandbox()
    box.start()
    try:
        assert box.load(spec, "import random\nprint(random.getrandbits(64))") is None
        outs = [box.run_test(b"", timeout=20).stdout for _ in range(3)]
    finally:
        box.close()
    assert all(outs) and len(set(outs)) == 3, outs


def test_apps_call_codewars_wrapped_output_and_numpy_prelude(reuse) -> None:
    problem = call_problem("is_even", [("[4]", "[true]"), ("[3]", "[false]")], checker="apps")
    code = "def is_even(n):\n    return bool(np.int64(n) % 2 == 0)"  # `np` from APPS' prelude
    assert one(problem, code).verdict == "AC"


def test_apps_stdin_wrapper_fallback_for_top_level_nonlocal(reuse) -> None:
    code = "def f():\n    nonlocal x\n    return x\nx = int(input())\nprint(f() + 1)"
    problem = stdin_problem([("4\n", "5\n")], checker="apps")
    assert one(problem, code).verdict == "AC"
    assert (
        one(stdin_problem([("4\n", "5\n")], checker="codecontests"), "nonlocal x").verdict == "CE"
    )


def test_apps_programs_may_read_their_input_from_a_file_as_upstream(reuse) -> None:
    code = "import sys\nsys.stdin = open('input.txt')\nprint(int(input()) * 2)"
    assert one(stdin_problem([("21\n", "42\n")], checker="apps"), code).verdict == "AC"
    assert one(stdin_problem([("21\n", "42\n")], checker="lcb"), code).verdict == "RE"


def test_problem_limits_override_defaults() -> None:
    code = "x = bytearray(150 * 2**20)\nprint(len(x) > 0)"
    assert one(stdin_problem([("", "True\n")], memory_mb=256), code).verdict == "AC"
    assert one(stdin_problem([("", "True\n")], memory_mb=64), code).verdict == "MLE"
    slow = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5:\n    pass\nprint(1)"
    assert one(stdin_problem([("", "1\n")], time_s=1.0), slow).verdict == "TLE"
    # the limit is CPU time: on a machine too busy to give 1.5 s of CPU within the default wall
    # backstop (2 x 3 + 1 s) the backstop would say TLE, so it is out of the way here
    roomy = Limits(wall_factor=100.0)
    assert one(stdin_problem([("", "1\n")], time_s=3.0), slow, limits=roomy).verdict == "AC"


def test_numpy_is_importable_and_nothing_else_installed() -> None:
    code = "import numpy as np\nprint(int(np.arange(5).sum()))\nimport click"
    result = one(stdin_problem([("", "10\n")]), code)
    assert result.verdict == "RE" and "click" in result.detail


def test_tests_do_not_share_scratch_or_see_expected_outputs(reuse) -> None:
    # Test 1 expects the input of test 0: only a leak through the scratch dir would pass it.
    leak = (
        "import os\n"
        "data = input()\n"
        "if os.path.exists('keep.txt'):\n"
        "    print(open('keep.txt').read())\n"
        "else:\n"
        "    open('keep.txt', 'w').write(data)\n"
        "    print(data)\n"
    )
    problem = stdin_problem([("alpha\n", "alpha\n"), ("beta\n", "alpha\n")])
    assert one(problem, leak, all_tests=True).tests_passed == 1
    # The expected output is never inside the sandbox, even in the harness's memory.
    hunt = (
        "import gc, sys\n"
        "found = [x for o in gc.get_objects() if isinstance(o, (dict, list, tuple))\n"
        "         for x in (o.values() if isinstance(o, dict) else o)\n"
        "         if isinstance(x, str) and x.startswith('TOKEN-')]\n"
        "f = sys._getframe()\n"
        "while f:\n"
        "    found += [v for v in f.f_locals.values() if isinstance(v, str) and 'TOKEN-' in v]\n"
        "    f = f.f_back\n"
        "print(found[0] if found else 'nothing')\n"
    )
    assert one(stdin_problem([("x\n", "TOKEN-51ab\n")]), hunt).verdict == "WA"


def test_cache_rescoring_never_reexecutes(tmp_path: Path, monkeypatch) -> None:
    code = "a, b = map(int, input().split())\nprint(a + b)"
    jobs = [
        VerifyJob(SUM, code),
        VerifyJob(SUM, "print(0)"),
        VerifyJob(SUM, "```python\n" + code + "\n```"),
    ]
    first = verify_batch(jobs, workers=2, cache_dir=tmp_path)
    assert [r.verdict for r in first] == ["AC", "WA", "AC"]

    def no_sandbox(self) -> None:
        raise AssertionError("a cached verdict was re-executed")

    monkeypatch.setattr(Sandbox, "start", no_sandbox)
    assert verify_batch(jobs, workers=2, cache_dir=tmp_path) == first
    with pytest.raises(AssertionError):  # a different limit is a different key
        verify_batch(jobs[:1], cache_dir=tmp_path, limits=Limits(time_s=5.0, output_mb=1))


def test_identical_jobs_in_a_batch_run_once(monkeypatch) -> None:
    calls = []
    real = pool_module.run_job

    def counted(*a: Any) -> Any:
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(pool_module, "run_job", counted)
    code = "a, b = map(int, input().split())\nprint(a + b)"
    results = verify_batch([VerifyJob(SUM, code)] * 5 + [VerifyJob(SUM, "print(0)")], workers=2)
    assert [r.verdict for r in results] == ["AC"] * 5 + ["WA"]
    assert len(calls) == 2


def test_concurrent_calls_are_thread_safe() -> None:
    outcomes: dict[int, list[str]] = {}

    def call(k: int) -> None:
        problem = stdin_problem([(f"{k} {k}\n", f"{2 * k}\n")], pid=f"p{k}")
        good = "a, b = map(int, input().split())\nprint(a + b)"
        res = verify_batch([VerifyJob(problem, good), VerifyJob(problem, "print(-1)")], workers=2)
        outcomes[k] = [r.verdict for r in res]

    threads = [threading.Thread(target=call, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == {k: ["AC", "WA"] for k in range(4)}


def test_bad_problems_fail_early_with_their_name() -> None:
    with pytest.raises(DataError, match="t/empty"):
        verify_batch([VerifyJob(Problem("t", "empty", "", tests=()), "print(1)")])
    bad = Problem("t", "badjson", "", tests=(Case("[1", "1", mode="call", fn_name="f"),))
    with pytest.raises(DataError, match="t/badjson: test 0"):
        verify_batch([VerifyJob(bad, "def f(x): return x")])
    with pytest.raises(DataError, match="unknown checker"):
        verify_batch([VerifyJob(Problem("t", "c", "", tests=(Case("", ""),), checker="nope"), "")])  # type: ignore[arg-type]  # (refused)


def test_container_command_mode_speaks_the_same_protocol(monkeypatch, tmp_path) -> None:
    """CPPO_SANDBOX=command (how the Docker/Apptainer images are used): here the command
    starts the same server directly, as a container's entrypoint would, from a folder that
    holds only the files the images copy (so a module missing from them fails here)."""
    import re
    import shutil
    import sys

    from cppo_bench.verifier import launch, sandbox

    images = launch.HERE.parents[1] / "sandbox_images"
    for name in ("Dockerfile", "cppo-verifier-sandbox.def"):
        copied = set(
            re.findall(r"cppo_bench/verifier/inside/(\w+\.py)", (images / name).read_text())
        )
        assert copied == set(launch.SANDBOX_FILES), name
    for name in launch.SANDBOX_FILES:
        shutil.copy(launch.INSIDE_DIR / name, tmp_path / name)
    server = f"{sys.executable} -I -S -B {tmp_path / 'harness.py'}"
    monkeypatch.setenv(launch.MODE_ENV, "command")
    monkeypatch.setenv(launch.COMMAND_ENV, server)
    monkeypatch.setattr(sandbox, "_MODE", None)
    results = verify_batch([VerifyJob(SUM, "a, b = map(int, input().split())\nprint(a + b)"),
                            VerifyJob(SUM, "print(0)")], workers=1)  # fmt: skip
    assert [(r.verdict, r.sandbox.split("-")[0]) for r in results] == [
        ("AC", "command"), ("WA", "command")]  # fmt: skip
    monkeypatch.setenv(launch.COMMAND_ENV, "")
    monkeypatch.setattr(sandbox, "_MODE", None)
    with pytest.raises(sandbox.SandboxError, match="CPPO_SANDBOX_COMMAND"):
        verify_batch([VerifyJob(SUM, "print(7)")], workers=1)


def test_without_user_namespaces_programs_still_get_fresh_scratch(monkeypatch) -> None:
    """Where the kernel refuses nested user namespaces, scratch is a directory per program,
    wiped (with all of the sandbox's /tmp) before the next program runs."""
    from cppo_bench.verifier import launch, sandbox

    # The planted program writes /tmp/stash: only bubblewrap gives the sandbox a /tmp of its
    # own; in the fallback modes that is the host's /tmp, which a test must never write.
    if sandbox.sandbox_mode() != "bwrap":
        pytest.skip(f"needs the bwrap sandbox (its private /tmp); have {sandbox.sandbox_mode()}")
    real = launch.launch_spec

    def no_userns(mode: str, nproc: int = 64):
        argv, init = real(mode, nproc)
        return argv, dict(init, userns=False)

    monkeypatch.setattr(sandbox, "launch_spec", no_userns)
    problem = stdin_problem([("", "clean\n")], pid="scratch")
    plant = (
        "import os, stat\n"
        "open('here.txt', 'w').write('x')\n"
        "os.makedirs('/tmp/stash/locked')\n"
        "open('/tmp/stash/locked/f', 'w').write('x')\n"
        "os.chmod('/tmp/stash/locked', 0)\n"
        "print('planted')\n"
    )
    look = (
        "import os\n"
        "print('clean' if not os.path.exists('/tmp/stash') and not os.listdir('.') else 'dirty')"
    )
    results = verify_batch([VerifyJob(problem, plant), VerifyJob(problem, look)], workers=1)
    assert [r.verdict for r in results] == ["WA", "AC"]
    assert results[1].sandbox.endswith("-nouserns")


@pytest.mark.parametrize("checker", ["lcb", "apps"])
def test_a_name_the_prelude_binds_is_not_the_programs_solution(reuse, checker) -> None:
    # lcb's prelude does `from operator import *`: without the check, a program defining
    # nothing was AC on any call problem whose function is called add, mul, ...
    problem = call_problem("add", [("[2, 3]", "5"), ("[1, 1]", "2")], checker=checker)
    assert one(problem, "x = 1\n").verdict == "RE"
    assert one(problem, "def add(a, b):\n    return a + b\n").verdict == "AC"


def test_keep_sandboxes_reuses_them_across_calls_and_closes_them_after() -> None:
    """A run (chunk after chunk) and a trainer (step after step) keep their sandboxes; a
    reused one is as clean as a fresh one: nothing of the earlier call's program is left."""
    plant = stdin_problem([("x\n", "planted\n")], pid="plant")
    probe = stdin_problem([("x\n", "clean\n")], pid="probe")
    mark = "import os\nopen('/tmp/mark', 'w').write('x')\nprint('planted')"
    look = "import glob\nprint('clean' if not glob.glob('/tmp/*mark*') else 'dirty')"
    with pool_module.keep_sandboxes():
        first = verify_batch([VerifyJob(plant, mark)], workers=1)
        idle = [b.proc and b.proc.pid for boxes in pool_module._IDLE.values() for b in boxes]
        second = verify_batch([VerifyJob(probe, look)], workers=1)
        again = [b.proc and b.proc.pid for boxes in pool_module._IDLE.values() for b in boxes]
        assert len(idle) == 1 and again == idle  # the same server served both calls
    assert [first[0].verdict, second[0].verdict] == ["AC", "AC"], (first, second)
    assert not pool_module._IDLE and not children_of_this_process()  # closed and reaped
    verify_batch([VerifyJob(probe, look)], workers=1)  # outside a block: nothing is kept
    assert not pool_module._IDLE


def test_the_probe_sandbox_serves_the_first_worker(monkeypatch) -> None:
    """A process's first verify call probes the sandbox mode with a real sandbox; that one
    (proven to work) serves the first worker instead of a second start, unless the settings
    it was started with changed in between."""
    from cppo_bench.verifier import launch, sandbox

    monkeypatch.setattr(sandbox, "_MODE", None)
    starts: list[tuple] = []
    real_start = sandbox.Sandbox.start

    def counted(self) -> None:
        real_start(self)
        starts.append(self.settings)

    monkeypatch.setattr(sandbox.Sandbox, "start", counted)
    job = VerifyJob(stdin_problem([("1\n", "1\n")]), "print(input())")
    assert verify_batch([job], workers=1)[0].verdict == "AC"
    assert len(starts) == 1, starts  # the probe's sandbox ran the job
    monkeypatch.setattr(sandbox, "_MODE", None)
    sandbox.sandbox_mode()  # a new probe, then different settings: not handed over
    monkeypatch.setenv(launch.REUSE_ENV, "0")
    assert verify_batch([VerifyJob(job.problem, "print(input())#")], workers=1)[0].verdict == "AC"
    assert len(starts) == 3 and starts[-1] != starts[-2], starts
    assert not sandbox._PROBED  # (the stale one was closed)
