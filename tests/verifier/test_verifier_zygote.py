"""Issue 42 item 5: the zygote a program runs from is chosen by what it imports, and what that
zygote preloaded (numpy) never counts as the program's memory: a program has the same room
under its limit from either zygote.
"""

from __future__ import annotations

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier.inside.programs import imports_numpy

IMPORTS = {
    "import numpy": True,
    "import numpy as np": True,
    "import os, numpy.linalg as la": True,
    "from numpy import array": True,
    "from numpy.random import randint": True,
    "def f():\n    import numpy\n    return numpy": True,
    "np = __import__('numpy')": True,
    "import importlib\nnp = importlib.import_module('numpy.random')": True,
    "from importlib import import_module\nnp = import_module('numpy')": True,
    "# numpy would be faster\nprint(1)": False,
    "print('numpy')": False,
    "'''uses numpy'''\nx = 1": False,
    "numpy = 3\nprint(numpy)": False,
    "import numpyx": False,
    "from .numpy import x": False,
    "__import__(name)": False,
    "np.array([1])": False,  # (no prelude binds np: a NameError, not an import)
    "import numpy\nthis does not parse": False,
}


@pytest.mark.parametrize("source", list(IMPORTS))
def test_the_zygote_follows_what_the_program_imports(source: str) -> None:
    assert imports_numpy(source) is IMPORTS[source], source


def test_apps_lazy_np_counts_as_an_import() -> None:
    assert imports_numpy("print(np.ones(2).sum())", prelude="apps")
    assert not imports_numpy("print(np.ones(2).sum())", prelude="lcb")


ECHO = Problem("i42", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")
# 200 MiB of a 256 MiB limit, touched, on each of three tests: a plain program has ~238 MiB of
# room (the interpreter's ~18); numpy's ~80 MiB of address space, counted as the program's,
# left ~157: MLE
ROOMY = Problem("i42", "roomy", "", checker="lcb", time_limit_s=5.0, memory_limit_mb=256,
                tests=tuple(Case(f"{k}\n", f"{k}\n") for k in range(3)))  # fmt: skip
BODY = "block = bytearray(200 << 20)\nprint(input())\n"
HEADS = {
    "plain": "",
    "numpy in a comment": "# numpy would do this faster\n",
    "numpy in a string": "NOTE = 'not numpy'\n",
    "imports numpy": "import numpy\nassert numpy.ones(3).sum() == 3\n",
}


@pytest.mark.parametrize("head", list(HEADS))
def test_a_programs_room_does_not_depend_on_its_zygote(mode: str, head: str) -> None:
    result, control = verify_batch(
        [VerifyJob(ROOMY, HEADS[head] + BODY), CONTROL], workers=1, all_tests=True
    )
    assert control.verdict == "AC", control
    assert (result.verdict, result.tests_passed) == ("AC", 3), result
    assert result.peak_memory_mb is not None and 200 <= result.peak_memory_mb < 240, result
