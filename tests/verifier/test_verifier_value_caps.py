"""Issue 42 item 5: the value-size cap (`decode.node_cap`) admits every value the official
checkers accept. They compare a call result with Python `==` (LiveCodeBench's
`grade_call_based`, after turning a returned tuple into a list), so any value `==` to the
expected JSON value must be parsed: complex, Fraction, Decimal, numpy scalars, bool for 0 / 1,
ints of any size the expected can hold, a tuple for the top-level list. The property is
checked on the encoding itself (hypothesis, over nested expected values and every equal
stand-in of each scalar), and end to end against the released grader for the case the issue
found (250,000 complex numbers equal to the expected floats, refused under the old 4x cap)."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lcb_official import official_testing_util

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier.decode import MAX_NODES, node_cap, node_count
from cppo_bench.verifier.inside.wire import encode_value

BIG = 1 << 4100  # past wire.PLAIN_INT_BITS: travels as hex, the costliest int


def stand_ins(x: object) -> list[object]:
    """Values of other types that Python finds `==` to the JSON scalar x."""
    if isinstance(x, bool):
        return [x, int(x), float(x), np.bool_(x), complex(x), Fraction(int(x))]
    if isinstance(x, int):
        out = [x, Fraction(x), Decimal(x)]
        if abs(x) < 2**53:
            out += [float(x), complex(x), np.float64(x)]
        if abs(x) < 2**63:
            out.append(np.int64(x))
        return out
    if isinstance(x, float):
        return [x, Fraction(x), Decimal(x), complex(x), np.float64(x), np.longdouble(x),
                np.clongdouble(x)]  # fmt: skip
    return [x]


scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([BIG, -BIG + 7, 2**63, 2**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
expected_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=40,
)


@st.composite
def equal_pairs(draw, value=None):
    """(expected JSON value, a program's value `==` to it)."""
    value = draw(expected_values) if value is None else value
    if isinstance(value, list):
        return value, [draw(equal_pairs(v))[1] for v in value]
    if isinstance(value, dict):
        return value, {k: draw(equal_pairs(v))[1] for k, v in value.items()}
    return value, draw(st.sampled_from(stand_ins(value)))


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=equal_pairs(), as_tuple=st.booleans())
def test_every_value_equal_to_the_expected_fits_the_cap(pair, as_tuple: bool) -> None:
    """The pair repeated K times in a list, K large enough that the cap is the per-value one
    (not the MAX_NODES floor, which would hide a cap too tight)."""
    expected, value = pair
    if as_tuple and isinstance(value, list):
        value = tuple(value)  # (the official grader lists a returned tuple)
    assert (list(value) if isinstance(value, tuple) else value) == expected
    text = json.dumps(expected)
    k = MAX_NODES // (node_count(text.encode()) + 1) + 1
    big_text = "[" + ", ".join([text] * k) + "]"
    one = node_count(json.dumps(encode_value(value)).encode())
    # the nodes of {"value": [v, v, ...]}: the wrapper, the list, k values and k-1 commas
    assert 2 + k * one + (k - 1) <= node_cap(big_text), (one, node_count(text.encode()))


def test_the_worst_stand_ins_fit_exactly_where_the_floor_no_longer_hides_them() -> None:
    """Each scalar replaced by its costliest equal stand-in, in a list large enough that the
    cap is the per-value one (not the MAX_NODES floor)."""
    n = MAX_NODES // 4
    for expected, stand_in in ((BIG, Fraction(BIG)), (0.5, Fraction(1, 2)), (0.5, 0.5 + 0j)):
        text = json.dumps([expected] * n)
        encoded = json.dumps({"value": encode_value([stand_in] * n)}).encode()
        assert node_count(encoded) <= node_cap(text), (type(stand_in), node_count(encoded))
    # and nothing much larger: nine times the expected's values is over
    assert 9 * n * 1 > node_cap(json.dumps([0] * n))


def test_a_quarter_million_complex_equal_to_the_floats_is_ac_as_officially() -> None:
    n = 250_000
    code = f"def f(x):\n    return [complex(i / 4) for i in range({n})]\n"
    expected = json.dumps([i / 4 for i in range(n)])
    util = official_testing_util()
    out = util.grade_call_based(code, ["0"], [expected], "f", 30)
    assert out is not None and list(out[0]) == [True], out
    problem = Problem("i42", "complex", "", checker="lcb", time_limit_s=10.0,
                      tests=(Case("0", expected, mode="call", fn_name="f"),))  # fmt: skip
    (result,) = verify_batch([VerifyJob(problem, code)], workers=1)
    assert result.verdict == "AC", result
