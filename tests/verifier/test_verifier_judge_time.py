"""Issue 36 item 4: judging a hostile output costs time linear in its size. round(x, 3) of a
huge float prints all its digits (40 us for 1e308): a 2 MB wrong answer of `1e308` tokens cost
the APPS set-of-sets stages 5.8 CPU-s. No timing here: the slow operations are counted."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cppo_bench.verifier import compare
from cppo_bench.verifier.compare_text import set_of_sets_equal

BIG = 2.0**52


@given(st.floats(allow_nan=False) | st.sampled_from([BIG, -BIG, BIG - 0.5, 1e308, -0.0]))
def test_the_constant_time_round_is_round(x: float) -> None:
    got, want = compare._round3(x), round(x, 3)
    assert got == want and math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("token", ["1e308", "-1.7976931348623157e308", "4.5e15", "inf"])
def test_no_slow_round_on_a_hostile_output(monkeypatch, token) -> None:
    slow: list[float] = []

    def spy(x: float, n: int | None = None) -> float:
        if math.isfinite(x) and abs(x) >= BIG:
            slow.append(x)
        return round(x, n)

    monkeypatch.setattr(compare, "round", spy, raising=False)
    out = " ".join([token] * 350_000)  # ~2 MB on one line, and on many
    for text in (out, out.replace(" ", "\n")):
        assert compare.apps_stdin(text, "0 1 2\n") is False
        assert compare.apps_stdin(text + " " + token, token + "\n") is True
    assert slow == []


def test_set_stages_hash_only_strings() -> None:
    """Float hashes are fixed (a program could make them collide); str hashes are keyed."""
    with pytest.raises(TypeError):
        set_of_sets_equal(iter(["1 2"]), {frozenset(["1", "2"])}, key=float)
    assert set_of_sets_equal(iter(["2 1", "1 2 2"]), {frozenset(["1", "2"])}, key=str)
    # the rounded stage, NaN and -0.0 as Python's float sets have them
    assert compare.apps_stdin("0.0001 -0.0\n", "0\n")
