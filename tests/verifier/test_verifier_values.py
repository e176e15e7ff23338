"""Issue 26 item 5: call results keep Python `==` semantics for every value type that can
equal a JSON value (the official APPS and LiveCodeBench checkers compare with `==`), with a
bounded encoding. The oracle is Python's own `==` on the original value."""

from __future__ import annotations

import collections
import json
import types
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cppo_bench.problem import Checker, Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier.compare import apps_call, exact_call, lcb_call
from cppo_bench.verifier.decode import decode_value
from cppo_bench.verifier.inside.wire import MAX_INT_BITS, Unrepresentable, encode_value


def roundtrip(value: object) -> object:
    return decode_value(json.loads(json.dumps(encode_value(value))))


def official(value: object, expected: object) -> bool:
    """LiveCodeBench's grade_call_based: a returned tuple becomes a list, then `==`."""
    if isinstance(value, tuple):
        value = list(value)
    try:
        return bool(value == expected)
    except ArithmeticError:  # Decimal('sNaN') == x raises: a runtime error there, not AC
        return False


def as_json(value: object) -> object:
    return json.loads(json.dumps(value))


numbers = (
    st.integers()
    | st.integers(min_value=2**3990, max_value=2**14000)
    | st.fractions(max_denominator=2**70)
    | st.decimals(allow_nan=True, places=None)
    | st.complex_numbers(allow_nan=False, allow_infinity=False)
    | st.floats(allow_nan=False)
    | st.booleans()
)


def near_json(value: object) -> list:
    """JSON values the number may (or may just not) equal: its int, its float, neighbours."""
    out: list = [0, 1, 0.5, True]
    number: Any = value.real if isinstance(value, complex) else value  # (int() may refuse it)
    for conv in (int, float):
        try:
            out.append(conv(number))
        except (ValueError, OverflowError, ArithmeticError):
            pass
    out += [x + 1 for x in out if type(x) is int]
    return [as_json(x) for x in out if not (isinstance(x, float) and x != x)]


@given(numbers)
def test_a_number_equals_what_python_says_it_equals(value: object) -> None:
    got = roundtrip(value)
    for expected in near_json(value):
        for rule in (lcb_call, apps_call):
            assert rule(got, expected) == official(value, expected), (value, expected)
            # nested in a list, as elements of a returned tuple
            assert rule(roundtrip([value]), [expected]) == official([value], [expected])


def test_the_issue_cases_compare_as_python_does() -> None:
    big = 3**8300  # 3960 digits, 13155 bits
    assert lcb_call(roundtrip(big), as_json(big))
    assert not lcb_call(roundtrip(big), as_json(big + 1))
    assert lcb_call(roundtrip(Fraction(1, 2)), 0.5) and lcb_call(roundtrip(Fraction(6, 1)), 6)
    assert not lcb_call(roundtrip(Fraction(1, 3)), 1 / 3)  # exact, as Fraction == float is
    assert lcb_call(roundtrip(Decimal("2.500")), 2.5) and lcb_call(roundtrip(Decimal("7")), 7)
    assert lcb_call(roundtrip(3 + 0j), 3)
    assert apps_call(roundtrip((Fraction(1, 4), big)), [0.25, as_json(big)])
    # wrappers compare as the data they hold
    assert lcb_call(roundtrip(collections.UserList([1, 2])), [1, 2])
    assert lcb_call(roundtrip(collections.UserString("ab")), "ab")
    assert lcb_call(roundtrip(collections.UserDict({"a": 1})), {"a": 1})
    assert lcb_call(roundtrip(types.MappingProxyType({"a": 1})), {"a": 1})
    # `exact` keeps JSON types: a Fraction or a Decimal is not a JSON number
    assert not exact_call(roundtrip(Fraction(1, 2)), 0.5)
    assert exact_call(roundtrip(big), as_json(big))


def test_an_unnormalised_fraction_compares_pairwise_like_fraction_eq() -> None:
    odd = object.__new__(Fraction)  # what only a hostile program builds: 2/4, not reduced
    odd._numerator, odd._denominator = 2, 4  # type: ignore[attr-defined]  # (its private slots)
    assert (odd == 0.5) is False
    assert lcb_call(roundtrip(odd), 0.5) is False


def test_the_encoding_is_bounded() -> None:
    assert isinstance(roundtrip(1 << (MAX_INT_BITS + 1)), Unrepresentable)
    assert isinstance(roundtrip(Decimal("1" * 70000)), Unrepresentable)
    huge_exponent = Decimal("1E999999999")  # tiny on the wire
    assert len(json.dumps(encode_value(huge_exponent))) < 30
    assert not lcb_call(roundtrip(huge_exponent), 10)
    for bad in ({"i": "xyz"}, {"q": [1]}, {"D": "1e5; rm"}, {"c": [1, "a"]}, {"i": "f" * 10**6}):
        assert isinstance(decode_value(bad), Unrepresentable)


def call_problem(fn: str, expected: object, checker: Checker) -> Problem:
    case = Case("[]", json.dumps(expected), mode="call", fn_name=fn)
    return Problem("t", f"{fn}-{checker}", "", tests=(case,), checker=checker, time_limit_s=5.0)


@pytest.mark.parametrize("checker", ["lcb", "apps"])
def test_correct_programs_with_big_ints_and_fractions_are_accepted(checker: Checker) -> None:
    cases = [
        ("power", 3**8300, "def power():\n    return 3 ** 8300\n"),
        ("half", 0.5, "from fractions import Fraction\ndef half():\n    return Fraction(1, 2)\n"),
        ("dec", 2.5, "from decimal import Decimal\ndef dec():\n    return Decimal('2.50')\n"),
        ("cplx", 4, "def cplx():\n    return complex(4, 0)\n"),
        ("pair", [1, 0.75], "from fractions import Fraction\n"
                            "def pair():\n    return (1, Fraction(3, 4))\n"),
    ]  # fmt: skip
    wrong = [
        ("third", 1 / 3, "from fractions import Fraction\ndef third():\n    return Fraction(1, 3)\n"),
        ("off", 3**8300 + 1, "def off():\n    return 3 ** 8300\n"),
    ]  # fmt: skip
    jobs = [VerifyJob(call_problem(fn, exp, checker), code) for fn, exp, code in cases + wrong]
    got = [r.verdict for r in verify_batch(jobs, workers=1)]
    assert got == ["AC"] * len(cases) + ["WA"] * len(wrong), got
