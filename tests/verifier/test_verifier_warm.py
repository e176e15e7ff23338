"""A child kept for a program's next test (inside/warm.py): faster, and accounted as fully as
a fresh child. Every sandbox mode, one worker, an honest control after each program.

Where the sandbox cannot account a kept child (no pid namespace, no seccomp filter, no
memory cgroup, no scratch tmpfs to watch) every test forks, and the tests that need a kept
child skip, saying so.
"""

from __future__ import annotations

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier import launch as launch_module
from tests.helpers.kept_child import kept

ECHO = Problem("warm", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")
# prints how many tests this process has run before: 0 on every test of a fresh child (the
# state of a module the program imported is what a kept child keeps by design; `sys` is put
# back between tests, inside/reset.py)
COUNTER = "import heapq\nn = getattr(heapq, '_cppo_seen', 0)\nheapq._cppo_seen = n + 1\nprint(n)\n"


def needs_kept(mode: str) -> None:
    if not kept(mode):
        pytest.skip(f"{mode}: no kept children here (no pid namespace, filter or memory cgroup)")


def problem(cases: list[tuple[str, str]], pid: str = "p", time_s: float = 2.0,
            memory_mb: int | None = None) -> Problem:  # fmt: skip
    return Problem("warm", pid, "", tests=tuple(Case(i, o) for i, o in cases), checker="lcb",
                   time_limit_s=time_s, memory_limit_mb=memory_mb)  # fmt: skip


def run(jobs: list[VerifyJob]):
    """The jobs, then an honest control, on one worker, every test run."""
    results = verify_batch([*jobs, CONTROL], workers=1, all_tests=True)
    assert results[-1].verdict == "AC", results[-1]
    return results[:-1]


def test_a_kept_child_serves_the_next_test_and_reuse_0_forks_each(mode, monkeypatch) -> None:
    needs_kept(mode)
    counting = problem([("\n", f"{k}\n") for k in range(4)])
    (result,) = run([VerifyJob(counting, COUNTER)])
    assert result.verdict == "AC", result  # one process served all four tests
    monkeypatch.setenv(launch_module.REUSE_ENV, "0")
    (result,) = run([VerifyJob(counting, COUNTER + "#")])
    assert (result.verdict, result.tests_passed) == ("WA", 1), result


def test_each_test_has_its_own_input_output_and_fresh_globals(mode) -> None:
    # test 0 reads one line of three: test 1 must not see the rest; globals start over
    code = (
        "try:\n    seen\nexcept NameError:\n    seen = 0\nseen += 1\nprint(input().strip(), seen)\n"
    )
    cases = [("a\nleft\nover\n", "a 1\n"), ("b\n", "b 1\n"), ("c\n", "c 1\n")]
    (result,) = run([VerifyJob(problem(cases), code)])
    assert result.verdict == "AC", result


def test_cpu_is_per_test_in_a_kept_child(mode) -> None:
    """Five tests of ~0.4 CPU-s each under a 1 s limit: AC (the child's CPU over all of them,
    2 s, would be TLE), and a burner on test 2 is TLE there while the tests after it, in a
    fresh child, are judged (all tests run)."""
    needs_kept(mode)
    burn = (
        "import time\nn = int(input())\nt = time.process_time()\n"
        "while time.process_time() - t < (30 if n == 2 else 0.4):\n    pass\nprint(n)\n"
    )
    steady = problem([("0\n", "0\n"), ("1\n", "1\n"), ("3\n", "3\n"), ("4\n", "4\n"),
                      ("5\n", "5\n")], time_s=1.0)  # fmt: skip
    stalled = problem([(f"{k}\n", f"{k}\n") for k in range(5)], "stall", time_s=1.0)
    fine, slow = run([VerifyJob(steady, burn), VerifyJob(stalled, burn)])
    assert fine.verdict == "AC", fine
    assert (slow.verdict, slow.first_failed, slow.tests_passed) == ("TLE", 2, 4), slow


def test_cpu_after_an_early_done_counts_for_the_next_test(mode) -> None:
    """A program that says "done" itself, then computes on while the judge works on its
    output (a 2 MB wrong one, slow to judge), gets no CPU free: the next test's clock starts
    where the last one was reported over. Every CPU second it burned is reported."""
    needs_kept(mode)
    code = (
        "import socket, sys, time\nn = input()\nif n == '0':\n"
        "    sys.stdout.write('x ' * (1 << 20))\n    sys.stdout.flush()\n"
        "    socket.socket(fileno=5).send(b'done')\n    t = time.process_time()\n"
        "    while time.process_time() - t < 1.5:\n        pass\nprint(n)\n"
    )
    cases = [("0\n", "0\n"), ("1\n", "1\n"), ("2\n", "2\n")]
    (result,) = run([VerifyJob(problem(cases, time_s=5.0), code)])
    assert result.cpu_s >= 1.5, result


def test_memory_an_earlier_test_left_held_counts(mode) -> None:
    """Each test keeps 60 MiB in the state of a module it imported (what a kept child keeps
    by design, as the official harnesses' one process does): by the fourth or fifth test
    that is over the 256 MiB limit: MLE. (Descriptors a test left open are closed before
    the next one: inside/reset.py.)"""
    needs_kept(mode)
    hoard = (
        "import heapq\nkept = getattr(heapq, '_kept', [])\nheapq._kept = kept\n"
        "kept.append(b' ' * (60 << 20))\nprint(input())\n"
    )
    cases = [(f"{k}\n", f"{k}\n") for k in range(8)]
    (result,) = run([VerifyJob(problem(cases, memory_mb=256), hoard)])
    assert result.verdict == "MLE", result
    assert 3 <= result.first_failed <= 4, result


def test_large_outputs_test_after_test_are_not_memory(mode) -> None:
    """A correct program printing 40 MiB on each of six tests under 256 MiB is AC: what an
    earlier test wrote is gone once it is judged (the child holds only its current files)."""
    code = "import sys\nn = input()\nsys.stdout.write((n + ' ') * (20 << 20))\n"
    cases = [(f"{k}\n", f"{k} " * (20 << 20)) for k in range(6)]
    (result,) = run([VerifyJob(problem(cases, memory_mb=256, time_s=5.0), code)])
    assert result.verdict == "AC", result


@pytest.mark.parametrize(
    "hostile",
    [
        # ends its test early on the control socket, then keeps writing from a thread
        "import os, socket, threading\nprint(input())\n"
        "socket.socket(fileno=5).send(b'done')\n"
        "threading.Thread(target=lambda: [os.write(1, b'x') for _ in iter(int, 1)],"
        " daemon=True).start()\n",
        # closes the control socket: its later tests run in fresh children
        "import os\nos.close(5)\nprint(input())\n",
        # sends garbage and a descriptor on it
        "import os, socket\ns = socket.socket(fileno=5)\n"
        "socket.send_fds(s, [b'test'], [0, 1, 2])\ns.send(b'x' * 60)\nprint(input())\n",
        # breaks what the child's own protocol code uses: it ends, its tests still judged
        "import socket\nsocket.socket = None\nprint(input())\n",
        "import os\nos.dup2(1, 5)\nprint(input())\n",
        # a raw thread (threading does not count it) still running: a fresh child after
        "import _thread, heapq, time\nn = getattr(heapq, '_cppo_seen', 0)\nheapq._cppo_seen = n + 1\n"
        "_thread.start_new_thread(time.sleep, (60,))\nprint(input() if n == 0 else 'reused')\n",
        # leaves a thread running (the recursion trick): waited for, then a fresh child
        "import threading, sys\nsys.setrecursionlimit(10**5)\n"
        "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
        "def main():\n    print(input() if f(3000) == 3000 else 'no')\n"
        "threading.stack_size(1 << 26)\nthreading.Thread(target=main).start()\n",
    ],
    ids=[
        "early done",
        "closed socket",
        "garbage",
        "socket broken",
        "fd 5 replaced",
        "raw thread",
        "thread left",
    ],  # fmt: skip
)
def test_the_control_socket_cannot_hurt_later_tests_or_programs(mode, hostile: str) -> None:
    """Whatever a program does with its control socket, only its own verdicts can change,
    and the tests the server ends are judged by what they wrote; the next program (a
    correct one, then the control) is AC."""
    cases = [(f"{k}\n", f"{k}\n") for k in range(4)]
    honest = VerifyJob(problem(cases, "honest"), "print(input())")
    first, second = run([VerifyJob(problem(cases), hostile), honest])
    assert first.tests_total == 4, first
    assert second.verdict == "AC", second
    if "_thread" in hostile or "None" in hostile or "dup2" in hostile:
        assert first.verdict == "AC", first  # (correct output each test, whatever the child)


SCRATCH_TRACES = """
import os
st = os.stat('/tmp')
seen = {'xattr': os.listxattr('/tmp'), 'mode': oct(st.st_mode & 0o7777),
        'mtime': st.st_mtime_ns == 1_000_000_123_456_789,
        'entries': [e for e in os.listdir('/tmp') if e == 'gone']}
try:
    os.setxattr('/tmp', 'user.mark', b'x')
except OSError:
    pass
open('/tmp/gone', 'w').close()
os.unlink('/tmp/gone')  # created and deleted: only the directory's times change
os.chmod('/tmp', 0o755)
os.utime('/tmp', ns=(st.st_atime_ns, 1_000_000_123_456_789))  # a time no clock gives
fresh = seen == {'xattr': [], 'mode': '0o700', 'mtime': False, 'entries': []}
print('isolated' if fresh else seen)
"""


def test_each_test_gets_a_fresh_scratch_whatever_the_last_one_did(mode: str) -> None:
    """The zygote remounts the scratch unless a test provably left it untouched, and a kept
    child serves a next test only then: xattrs, modes, times and deleted files of one test
    must not reach the next (same program)."""
    isolated = [("go\n", "isolated\n")]
    results = run([VerifyJob(problem(isolated * 3, "scratch"), SCRATCH_TRACES),
                   VerifyJob(problem(isolated * 3, "quiet"), "print('isolated')"),  # touch nothing
                   VerifyJob(problem(isolated, "probe"), SCRATCH_TRACES)])  # fmt: skip
    assert [r.verdict for r in results] == ["AC"] * 3, results
