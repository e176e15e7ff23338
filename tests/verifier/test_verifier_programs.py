"""How a stdin program runs (inside/programs.py, child._input): inside a function with its
imports hoisted, as the official harnesses run it, wherever that means the same program;
as a real module where it names its module scope. Verdicts checked against LiveCodeBench's
released `grade_stdio` (a local clone at $CPPO_LCB_CLONE or /tmp/lcb; skipped without)."""

from __future__ import annotations

import builtins
import sys

import pytest
from lcb_official import official_testing_util

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, launch, verify_batch

sys.path.insert(0, str(launch.INSIDE_DIR))
from programs import compile_program  # noqa: E402  (a stdlib-only sandbox file)

sys.path.remove(str(launch.INSIDE_DIR))

LOOP = "for _ in range(int(input())):\n    a, b = map(int, input().split())\n    print(a + b)\n"
# (program, input, expected output): every one AC here
PROGRAMS = {
    "top-level loop": (LOOP, "2\n1 2\n3 4\n", "3\n7\n"),
    "global counter": (
        "count = 0\ndef bump():\n    global count\n    count += 1\n"
        "for _ in range(int(input())):\n    bump()\nprint(count)\n",
        "3\n",
        "3\n",
    ),
    "globals()": ("x = int(input())\nprint(globals()['x'] * 2)\n", "21\n", "42\n"),
    "main guard": (
        "import sys\ndef main():\n    print(int(sys.stdin.readline()) + 1)\n"
        "if __name__ == '__main__':\n    main()\n",
        "1\n",
        "2\n",
    ),
    "future annotations": (
        "from __future__ import annotations\nfrom dataclasses import dataclass\n"
        "@dataclass\nclass P:\n    x: int\nprint(P(int(input())).x)\n",
        "5\n",
        "5\n",
    ),
    "closure and recursion": (
        "import sys\nsys.setrecursionlimit(10000)\nn = int(input())\nmemo = {}\n"
        "def fib(k):\n    if k < 2:\n        return k\n    if k not in memo:\n"
        "        memo[k] = fib(k - 1) + fib(k - 2)\n    return memo[k]\nprint(fib(n))\n",
        "90\n",
        "2880067194370816120\n",
    ),
    "class at top level": (
        "class A:\n    def __init__(self, v):\n        self.v = v\n"
        "def make(v):\n    return A(v)\nprint(make(int(input())).v)\n",
        "7\n",
        "7\n",
    ),
    "input until EOF": (
        "out = []\ntry:\n    while True:\n        out.append(input())\nexcept EOFError:\n"
        "    pass\nprint(len(out))\n",
        "a\nb\nc\n",
        "3\n",
    ),
    "prompt": ("x = input('> ')\nprint(x)\n", "hi\n", "> hi\n"),
    "no final newline": ("print(repr(input()))\n", "tail", "'tail'\n"),
    "star import": ("from math import *\nprint(floor(float(input())))\n", "2.5\n", "2\n"),
    # a module-level read of a builtin, then the name bound: an unbound local in a function
    "shadowed builtin": (
        "list = list(map(int, input().split()))\nprint(sum(list))\n",
        "1 2\n",
        "3\n",
    ),
    # a hoisted import, the same name imported again in a block: local in a function
    "import again": (
        "import os\nx = os.sep\nif input() == 'go':\n    import os\nprint(x == os.sep)\n",
        "go\n",
        "True\n",
    ),
}


def test_how_each_program_is_compiled() -> None:
    known = frozenset(dir(builtins))
    wrapped = {k: compile_program(c, "stdin", known)[1] for k, (c, _, _) in PROGRAMS.items()}
    assert wrapped["top-level loop"] and wrapped["closure and recursion"], wrapped
    assert wrapped["main guard"] and wrapped["prompt"], wrapped
    assert not wrapped["global counter"] and not wrapped["globals()"], wrapped
    assert not wrapped["future annotations"] and not wrapped["star import"], wrapped
    assert not wrapped["shadowed builtin"] and not wrapped["import again"], wrapped
    assert compile_program("def f(:\n", "stdin") == (None, compile_program("def f(:\n", "stdin")[1])
    # only compiles inside a function: wrapped, as the official harnesses run it
    assert compile_program("return\n", "stdin")[1] is True
    assert compile_program(LOOP, "call")[1] is False  # (call-based: the module as it is)


def _job(name: str) -> VerifyJob:
    code, inp, out = PROGRAMS[name]
    tests = (Case(inp, out),) * 2  # (a kept child serves the second)
    return VerifyJob(Problem("prog", name, "", tests=tests, checker="lcb"), code)


def test_every_program_is_ac(reuse) -> None:
    results = verify_batch([_job(name) for name in PROGRAMS], workers=1, all_tests=True)
    assert {n: r.verdict for n, r in zip(PROGRAMS, results, strict=True)} == dict.fromkeys(
        PROGRAMS, "AC"
    )


# what the official wrapper breaks (and we run as modules, on purpose): module scope named,
# a __future__ import no longer first, a name bound that a module-level read found elsewhere
MODULE_ONLY = ("global counter", "globals()", "future annotations", "shadowed builtin",
               "import again")  # fmt: skip


@pytest.mark.parametrize("name", [n for n in PROGRAMS if n not in MODULE_ONLY])
def test_the_official_harness_agrees(name: str) -> None:
    """Each program is AC in the official grade_stdio too (but MODULE_ONLY's, which fail in
    its function wrapper: we run those as modules, on purpose)."""
    code, inp, out = PROGRAMS[name]
    got = official_testing_util().grade_stdio(code, [inp], [out], 10)
    assert got is not None and got[0] == [True], (name, got)
