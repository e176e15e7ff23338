"""Issue 36 item 3: a value the official checker accepts is AC. LiveCodeBench compares a call
result with Python `==` under the numpy the program ran with; the oracle here is the
released `grade_call_based` itself (lcb_runner/evaluation/testing_util.py of a local clone of
LiveCodeBench/LiveCodeBench, found through $CPPO_LCB_CLONE or /tmp/lcb; nothing of it is
copied here), run on the same program, input and expected output as our verifier."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from lcb_official import official_testing_util

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, keep_sandboxes, verify_batch
from cppo_bench.verifier.decode import MAX_NODES


def official_ac(util, code: str, arg: str, expected: str) -> bool:
    """The released grader's verdict: every result true (its metrics take `> 0`)."""
    out = util.grade_call_based(code, [arg], [expected], "f", 10)
    return out is not None and bool(np.all(np.array(out[0]) > 0)) and len(out[0]) == 1


def ours(cases: list[tuple[str, str, str]]) -> list[str]:
    jobs = [VerifyJob(Problem("t", f"v{i}", "", tests=(Case(arg, want, mode="call", fn_name="f"),),
                              checker="lcb"), code)
            for i, (code, arg, want) in enumerate(cases)]  # fmt: skip
    return [r.verdict for r in verify_batch(jobs, workers=1)]


def scalar_program(value: np.generic) -> str:
    dtype, raw = value.dtype.str, value.tobytes().hex()
    return ("import numpy as np\n"
            f"def f(x):\n    return np.frombuffer(bytes.fromhex('{raw}'), np.dtype('{dtype}'))[0]\n")  # fmt: skip


DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.longdouble, np.complex64,
          np.complex128, np.clongdouble]  # fmt: skip


def expected_near(value: np.generic) -> list[str]:
    """JSON texts the scalar may (or may just not) equal: its Python forms, neighbours."""
    out = ["0", "1", "0.5", "true", "0.1", "[1]"]
    for conv in (int, float):
        try:
            x = conv(value.real if np.iscomplexobj(value) else value)
            out.append(json.dumps(x))
            if conv is float:
                out.append(json.dumps(float(np.nextafter(x, np.inf))))
        except (ValueError, OverflowError, TypeError):
            pass
    return out


@st.composite
def numpy_cases(draw) -> tuple[str, str, str]:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    if dtype.kind == "f" and dtype.itemsize > 8:  # hypothesis has no longdouble: from a float64
        value = dtype.type(draw(hnp.from_dtype(np.dtype(np.float64), allow_nan=False)))
        value = value / dtype.type(draw(st.sampled_from([1, 3, 10])))
    elif dtype.kind == "c" and dtype.itemsize > 16:
        value = dtype.type(draw(hnp.from_dtype(np.dtype(np.complex128), allow_nan=False)))
    else:
        value = draw(hnp.from_dtype(dtype, allow_nan=False))
    return scalar_program(value), "0", draw(st.sampled_from(expected_near(value)))


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(numpy_cases(), min_size=20, max_size=20))
def test_numpy_scalars_are_judged_as_the_official_checker_judges(cases) -> None:
    util = official_testing_util()
    want = ["AC" if official_ac(util, *case) else "WA" for case in cases]
    with keep_sandboxes():
        got = ours(cases)
    assert [(g, c[2]) for g, c in zip(got, cases, strict=True)] == [
        (w, c[2]) for w, c in zip(want, cases, strict=True)]  # fmt: skip


def test_the_values_numpy_2_and_longdouble_make_equal() -> None:
    """The three held-out classes: longdouble / clongdouble (`.item()` returns themselves),
    float32 equal by numpy 2's rules, and a list larger than the old node cap."""
    util = official_testing_util()
    big = MAX_NODES + 100_000
    cases = [
        (scalar_program(np.longdouble(1) / np.longdouble(4)), "0", "0.25"),
        (scalar_program(np.clongdouble(3)), "0", "3"),
        (scalar_program(np.float32(0.1)), "0", "0.1"),
        (f"def f(x):\n    return list(range({big}))\n", "0", json.dumps(list(range(big)))),
        ("import numpy as np\ndef f(x):\n    return [np.int64(i) for i in range(100000)]\n",
         "0", json.dumps(list(range(10**5)))),
        (scalar_program(np.float32(0.1)), "0", "0.2"),  # a control: WA on both sides
    ]  # fmt: skip
    want = ["AC" if official_ac(util, *case) else "WA" for case in cases]
    assert want == ["AC"] * 5 + ["WA"]
    assert ours(cases) == want


def test_a_value_far_larger_than_the_expected_is_wa_not_re() -> None:
    huge = f"def f(x):\n    return [0] * {3 * MAX_NODES}\n"
    assert ours([(huge, "0", "[0, 0]"), ("def f(x):\n    return [0, 0]\n", "0", "[0, 0]")]) == [
        "WA", "AC"]  # fmt: skip


_TEXT = st.text(alphabet="0123456789 .-e\n\r\t", max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    output=_TEXT,
    expected=_TEXT,
    edit=st.sampled_from(["as is", "same", "padded", "newline", "spaced"]),
)
def test_stdout_is_judged_as_the_official_grade_stdio_judges(
    output: str, expected: str, edit: str
) -> None:
    """Our LiveCodeBench stdin comparer (with its shortcut for an identical text) against the
    released `grade_stdio`, fed a program that writes exactly `output`."""
    from cppo_bench.verifier.compare import lcb_stdin

    util = official_testing_util()
    expected = {"as is": expected, "same": output, "padded": f"  {output}\n\n",
                "newline": output.replace(" ", "\n"), "spaced": output.replace("\n", " \n")}[edit]  # fmt: skip
    got = util.grade_stdio(f"import sys\nsys.stdout.write({output!r})\n", [""], [expected], 10)
    official = got is not None and all(r is True for r in got[0]) and len(got[0]) == 1
    assert lcb_stdin(output, expected) == official, (output, expected)
