"""Issue 42 item 3: a kept child judges every program exactly as a fresh child per test does.
Each test runs in every sandbox mode and both reuse modes (conftest's `mode`), one worker,
every test of the program run, an honest control after it, and demands the same verdict in
both: AC.

Correct programs that failed in a kept child (the first three from the issue, the others
written as an adversary of the same class: state one test leaves that changes the next),
and one program that reads every piece of process state a test could change, then changes
all of it: each of its tests must find the state a fresh child finds.
"""

from __future__ import annotations

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from tests.helpers.kept_child import kept

ECHO = Problem("i42", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")


def problem(pid: str, tests: int = 6, memory_mb: int = 256, lines: int = 1) -> Problem:
    cases = tuple(Case(f"{k}\n" * lines, f"{k}\n") for k in range(tests))
    return Problem("i42", pid, "", tests=cases, checker="lcb", time_limit_s=5.0,
                   memory_limit_mb=memory_mb)  # fmt: skip


def run(job: VerifyJob):
    result, control = verify_batch([job, CONTROL], workers=1, all_tests=True)
    assert control.verdict == "AC", control
    return result


PROGRAMS = {
    # (issue) the file object of test j closed test j+1's stdin when it was collected
    "input = open(0).readline": "input = open(0).readline\nprint(input().strip())\n",
    "sys.stdin = open(0)": "import sys\nsys.stdin = open(0)\nprint(input())\n",
    # (issue) a 70 MB table in a module whose globals form a cycle: rebound, not collected
    "table in a cyclic module": (
        "import sys\nTABLE = list(range(70 * 1024 * 1024 // 36))\nME = globals()\n"
        "def f():\n    return TABLE\nprint(input())\n"
    ),
    # (new) the fast-output idiom: test j's writer closed test j+1's stdout when collected
    "sys.stdout = os.fdopen(1)": (
        "import os, sys\nsys.stdout = os.fdopen(1, 'w', 1 << 16)\nprint(input())\n"
    ),
    # (new) cyclic garbage with the collector off: a kept child held every test's
    "gc off, cyclic garbage": (
        "import gc\ngc.disable()\nnodes = [[] for _ in range(800000)]\n"
        "for a, b in zip(nodes, nodes[1:] + nodes[:1]):\n    a.append(b)\n"
        "del nodes\nprint(input())\n"
    ),
    # (new) a timer armed only for a large input and never disarmed: it fired in the next
    # test of the same process (0.6 s of sleep per test, the timer at 1 s)
    "a timer left armed": (
        "import signal, time\nn = input()\n"
        "def late(*_):\n    raise TimeoutError('a timer of an earlier test')\n"
        "signal.signal(signal.SIGALRM, late)\n"
        "if n == '0':\n    signal.setitimer(signal.ITIMER_REAL, 1.0)\n"
        "time.sleep(0.6)\nprint(n)\n"
    ),
}


# appended to a program: its sixth test in one process adds a line (only a kept child's can)
SIXTH = (
    "\nimport heapq as _h\n_h._n = getattr(_h, '_n', 0) + 1\nif _h._n == 6:\n    print('kept')\n"
)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_correct_program_is_ac_with_a_kept_child_as_with_fresh_ones(mode, reuse, name) -> None:
    memory_mb = 160 if "table" in name else 256
    p = problem(name.split()[0], memory_mb=memory_mb)
    result = run(VerifyJob(p, PROGRAMS[name]))
    assert (result.verdict, result.tests_passed) == ("AC", 6), result
    if reuse == "1" and kept(mode):  # and one child really served all six
        result = run(VerifyJob(p, PROGRAMS[name] + SIXTH))
        assert (result.verdict, result.tests_passed, result.first_failed) == ("WA", 5, 5), result


# What a test can see of its process; printed as a digest (the first test of a program is
# always a fresh child: every later one must print the same)
STATE = """
import atexit, builtins, faulthandler, gc, hashlib, os, resource, signal, sys, tracemalloc
import types
rl = [(n, resource.getrlimit(getattr(resource, n))) for n in dir(resource)
      if n.startswith('RLIMIT_') and n != 'RLIMIT_CPU']
fds = [fd for fd in range(64) if fd != 5 and _isopen(fd)]
seen = [sorted(sys.__dict__), sys.path, [type(f).__name__ for f in sys.meta_path],
        sorted(builtins.__dict__), sorted(os.__dict__), dict(os.environ),
        [getattr(signal.getsignal(s), '__qualname__', signal.getsignal(s))
         for s in signal.valid_signals() if s not in (9, 19)],
        sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        [signal.getitimer(w) for w in (0, 1, 2)], os.umask(0o22), os.getcwd(), rl,
        sys.getrecursionlimit(), sys.get_int_max_str_digits(), sys.getswitchinterval(),
        sys.gettrace(), sys.getprofile(), gc.isenabled(), gc.get_threshold(),
        faulthandler.is_enabled(), tracemalloc.is_tracing(), atexit._ncallbacks(),
        sorted(k for k, m in sys.modules.items() if getattr(m, '__spec__', None) is None),
        type(sys.modules['json']).__name__, fds, sys.stdin.read()]
print(hashlib.sha256(repr(seen).encode()).hexdigest()[:32])
sys.stdout.flush()
# and change all of it
sys.marker = 1
sys.path.append('/nowhere')
sys.meta_path.append(types.SimpleNamespace(find_spec=lambda *a: None))
builtins.input = builtins.zzz = lambda *a: 'x'
os.extra = 1
os.environ['LEFT'] = 'behind'
os.putenv('PUT', 'env')
signal.signal(signal.SIGUSR1, lambda *a: None)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
signal.setitimer(signal.ITIMER_PROF, 100.0)
os.umask(0)
os.chdir('/')
soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
resource.setrlimit(resource.RLIMIT_STACK, (min(soft, 1 << 22), hard))
sys.setrecursionlimit(12345)
sys.set_int_max_str_digits(0)
sys.setswitchinterval(0.1)
gc.disable()
gc.set_threshold(1)
faulthandler.enable()
tracemalloc.start()
atexit.register(print, 'atexit')
sys.modules['made_here'] = types.ModuleType('made_here')
sys.modules['json'] = types.ModuleType('json')
kept = [open(os.devnull), os.dup(1), os.pipe()]
sys.settrace(lambda *a: None)
"""
IS_OPEN = "import os\ndef _isopen(fd):\n    try:\n        os.fstat(fd)\n        return True\n    except OSError:\n        return False\nimport json\n"


def test_every_test_finds_the_process_as_a_fresh_child_does(mode, reuse) -> None:
    code = IS_OPEN + STATE
    probe = Problem("i42", "probe", "", tests=(Case("in\n", "?\n"),), checker="lcb")
    (fresh, _) = verify_batch([VerifyJob(probe, code), CONTROL], workers=1)
    digest = fresh.detail.split("got '")[1].split("'")[0]
    assert len(digest) == 32, fresh
    cases = tuple(Case("in\n", digest + "\n") for _ in range(6))
    state = Problem("i42", "state", "", tests=cases, checker="lcb", time_limit_s=5.0)
    result = run(VerifyJob(state, code))
    assert (result.verdict, result.tests_passed) == ("AC", 6), result
    if reuse == "1" and kept(mode):  # and one child really served all six
        result = run(VerifyJob(state, code + SIXTH))
        assert (result.verdict, result.tests_passed, result.first_failed) == ("WA", 5, 5), result
