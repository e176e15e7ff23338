"""Issue 42 item 4: nothing a program returns or prints makes the host's judging raise.

Every kind of value a program can return (ints past Python's digit limit, deep and
self-referencing nesting, NaN and infinities, complex, bytes, Decimal, Fraction, sets, dicts,
huge strings) goes through the real path: the test child's encoder (`wire.encode_value`, as
`child._run_once` writes the status), then `runner.judge` (decode, compare, detail), the one
door every caller goes through. It never raises, the verdict is AC or WA, the detail is
short, and where LiveCodeBench's released `grade_call_based` / `grade_stdio` can judge the
same value (loaded by tests/helpers/lcb_official.py), the verdict is theirs. Program outputs
(any bytes: non-UTF-8, huge, odd line breaks) go through every stdin rule the same way.
"""

from __future__ import annotations

import json
import math
import pickle
import sys
from decimal import Decimal
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lcb_official import official_testing_util

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import Limits, VerifyJob, verify_batch
from cppo_bench.verifier.compare import CHECKERS, get_checker
from cppo_bench.verifier.inside.wire import encode_value
from cppo_bench.verifier.runner import READY, judge
from cppo_bench.verifier.sandbox import TestRun as RawRun

LIMITS = Limits()
DETAIL_MAX = 600  # what a verdict's detail may hold: two clipped texts and the words around


def _run(stdout: bytes = b"", status: bytes = b'{"ok": true}') -> RawRun:
    return RawRun(exit_code=0, cpu_s=0.01, wall_s=0.01, maxrss_kb=1000, timed_out=False,
                   truncated=False, stdout=stdout, status=READY + status, stderr="")  # fmt: skip


def ours_call(value: object, expected: str, checker: str = "lcb") -> tuple[str, str]:
    status = json.dumps({"value": encode_value(value)}).encode()  # as child._run_once
    test = Case("[0]", expected, mode="call", fn_name="f")
    return judge(_run(status=status), test, get_checker(checker), LIMITS)


def ours_stdin(output: bytes, expected: str, checker: str) -> tuple[str, str]:
    return judge(_run(stdout=output), Case("", expected), get_checker(checker), LIMITS)


def _deep(depth: int) -> list:
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


def _self_referencing() -> list:
    a: list = [1]
    a.append(a)
    return a


_SELF = _self_referencing()
huge_ints = st.builds(
    lambda k, s: s * (7**k + 3), st.integers(5000, 40_000), st.sampled_from([1, -1])
)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), huge_ints,
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(allow_nan=True),
    st.decimals(allow_nan=True, allow_infinity=True), st.fractions(),
    st.text(), st.binary(), st.sampled_from(["x" * 3_000_000, b"\xff" * 1_000_000]),
)  # fmt: skip
hashables = st.one_of(st.integers(), st.text(max_size=5), st.floats(), huge_ints)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
        st.sets(hashables, max_size=4), st.frozensets(hashables, max_size=4),
        st.dictionaries(hashables, inner, max_size=4),
    ),
    max_leaves=12,
) | st.sampled_from([_deep(150), _deep(99), _SELF, [10**5000] * 3])  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=8,
)  # fmt: skip


def _expected_for(value: object, other: object) -> list[str]:
    """The JSON texts to judge `value` against: its own JSON form where it has one (so that
    some cases are right), and an unrelated JSON value."""
    out = [json.dumps(other)]
    try:
        text = json.dumps(value, allow_nan=False)
        json.loads(text)  # (an int past the digit limit cannot be an expected output)
        out.append(text)
    except (TypeError, ValueError, RecursionError):
        pass
    return out


def official_call_ac(util, value: object, expected: str) -> bool | None:
    """LiveCodeBench's verdict on a program returning `value` (None: not asked: a value whose
    comparison recurses without end, or one nested past decode.MAX_DEPTH, which SECURITY.md
    names as equal to nothing)."""
    if value is _SELF or _depth(value) > 90:
        return None
    code = f"import pickle\ndef f(x):\n    return pickle.loads({pickle.dumps(value)!r})\n"
    limit = sys.getrecursionlimit()
    try:  # (its import_string raises the recursion limit of this very process)
        out = util.grade_call_based(code, ["0"], [expected], "f", 10)
    finally:
        sys.setrecursionlimit(limit)
    return out is not None and out[0] == [True]


def _depth(v: object, d: int = 0) -> int:
    if d > 200 or not isinstance(v, (list, tuple, set, frozenset, dict)):
        return d
    items = list(v.values()) if isinstance(v, dict) else list(v)
    return max((_depth(x, d + 1) for x in items), default=d + 1)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(values, json_values, st.sampled_from(sorted(CHECKERS.names())))
def test_no_returned_value_makes_judging_raise(value, other, checker) -> None:
    for expected in _expected_for(value, other):
        verdict, detail = ours_call(value, expected, checker)
        assert verdict in ("AC", "WA"), (verdict, detail)
        assert len(detail) <= DETAIL_MAX, detail


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(values, json_values)
def test_returned_values_get_the_official_verdict(value, other) -> None:
    util = official_testing_util()
    for expected in _expected_for(value, other):
        official = official_call_ac(util, value, expected)
        verdict, _ = ours_call(value, expected)
        if official is not None:
            assert verdict == ("AC" if official else "WA"), (value, expected)
        else:
            assert verdict in ("AC", "WA") and (value is not _SELF or verdict == "WA")


statuses = st.dictionaries(
    st.sampled_from(["value", "exc", "sysexit", "signal", "ok", "x"]),
    json_values | huge_ints.map(lambda n: n % 10**4000) | st.just(_deep(900)),
    max_size=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(statuses, st.sampled_from(["call", "stdin"]), st.sampled_from(sorted(CHECKERS.names())))
def test_no_status_report_makes_judging_raise(status, mode, checker) -> None:
    """The status file is the program's to write (fd 3): any JSON object in it, from odd
    keys to a 4000-digit exit code or an exception named by a 900-deep list."""
    test = Case("[0]", "1", mode=mode, fn_name="f")
    raw = json.dumps(status).encode()
    verdict, detail = judge(_run(status=raw), test, get_checker(checker), LIMITS)
    assert verdict in ("AC", "WA", "RE", "MLE"), (verdict, detail)
    assert len(detail) <= DETAIL_MAX, detail


outputs = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\n" * 150_000 + b"42\n", b"\xff\xfe" * 100_000, b"1e308 " * 100_000,
                     "\u2028\x85\r\n".encode() * 10_000, b"9" * 5000 + b"\n", b"nan inf -inf\n"]),
)  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(outputs, st.sampled_from(["42\n", "1 2 3\n", "nan\n", "9" * 5000 + "\n", "a\nb\n"]),
       st.sampled_from(sorted(CHECKERS.names())))  # fmt: skip
def test_no_printed_output_makes_judging_raise(output, expected, checker) -> None:
    verdict, detail = ours_stdin(output, expected, checker)
    assert verdict in ("AC", "WA"), (verdict, detail)
    assert len(detail) <= DETAIL_MAX, detail


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.text(alphabet=" \n\t0123456789.-abE", max_size=60),
    st.sampled_from(["42\n", "1 2\n3\n", "1.0\n"]),
)
def test_printed_outputs_get_the_official_lcb_verdict(text, expected) -> None:
    util = official_testing_util()
    code = f"import sys\nsys.stdout.write({text!r})\n"
    limit = sys.getrecursionlimit()
    try:
        out = util.grade_stdio(code, [""], [expected], 10)
    finally:
        sys.setrecursionlimit(limit)
    official = out is not None and out[0] == [True]
    assert ours_stdin(text.encode(), expected, "lcb")[0] == ("AC" if official else "WA")


def test_a_5000_digit_wrong_answer_is_wa_and_every_later_test_runs() -> None:
    """The issue's case, end to end: 4 of 5 right, one a 5000-digit wrong int (its detail's
    repr used to raise: RE, uncached, later tests skipped)."""
    tests = tuple(Case(json.dumps([k]), "1" if k != 1 else "2", mode="call", fn_name="f")
                  for k in range(5))  # fmt: skip
    problem = Problem("total", "bigint", "", tests=tests, checker="lcb")
    code = "def f(k):\n    return 10 ** 5000 if k == 1 else 1\n"
    control = VerifyJob(Problem("total", "c", "", tests=(Case("[1]", "1", mode="call", fn_name="f"),),
                                checker="lcb"), "def f(k):\n    return k\n")  # fmt: skip
    result, ok = verify_batch([VerifyJob(problem, code), control], workers=1, all_tests=True)
    assert (result.verdict, result.tests_passed, result.first_failed) == ("WA", 4, 1), result
    assert "5000" not in result.detail or len(result.detail) <= DETAIL_MAX
    assert ok.verdict == "AC", ok
    assert math.isfinite(result.time_s)


def test_odd_values_decode_to_nothing_equal() -> None:
    """Decimal, Fraction and huge ints keep Python's == (the official rule) through the path."""
    assert ours_call(Decimal("1.5"), "1.5")[0] == "AC"
    assert ours_call(Fraction(3, 2), "1.5")[0] == "AC"
    assert ours_call(10**5000, "1")[0] == "WA"
    assert ours_call(float("nan"), "1")[0] == "WA"
