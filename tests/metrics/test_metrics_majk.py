"""maj@K: the most frequent normalised answer, ties to the first seen."""

from __future__ import annotations

import pytest

from cppo_bench.metrics import maj_at_k, maj_at_k_many, majority_answer, normalise_answer


def test_normalise_literals_and_text():
    assert normalise_answer("[1,2]") == normalise_answer(" [1, 2] ") == "[1, 2]"
    assert normalise_answer("'abc'") == normalise_answer('"abc"')
    assert normalise_answer("hello   world \n") == "hello world"
    assert normalise_answer("   ") is None
    assert normalise_answer(None) is None


def test_majority_and_tie_break_by_order():
    assert majority_answer(["3", "4", "4", "3", "5"]) == "3"  # 2-2 tie: "3" was seen first
    assert majority_answer(["4", "3", "3", "4"]) == "4"
    assert majority_answer(["1", "2", "2"]) == "2"
    assert majority_answer(["[1,2]", "[1, 2]", "7"]) == "[1, 2]"
    assert majority_answer([None, "", None]) is None


def test_only_first_k_samples_vote():
    answers = ["1", "2", "2", "1", "1"]
    assert majority_answer(answers, k=3) == "2"
    assert majority_answer(answers) == "1"
    assert maj_at_k(answers, "2", k=3)
    assert not maj_at_k(answers, "2", k=5)


def test_abstentions_do_not_vote_and_never_match():
    assert maj_at_k([None, "5", None], "5", k=3)
    assert not maj_at_k([None, None], "", k=2)


def test_needs_k_samples_and_vectorised_form():
    with pytest.raises(ValueError):
        maj_at_k(["1"], "1", k=2)
    got = maj_at_k_many([["1", "1", "2"], ["a", "b", "b"], ["x", "y", "z"]], ["1", "'a'", "z"], k=3)
    assert got.tolist() == [1.0, 0.0, 0.0]  # 'a' (a str literal) != a (a bare name): kept apart
