"""D_surf = 1 - Self-BLEU-4: the edge cases, and BLEU-4 against sacrebleu as an oracle."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cppo_bench.diversity import self_bleu, sentence_bleu, surface_diversity, tokenize


def test_identical_texts_have_zero_diversity():
    plan = "Sort the intervals by start, then sweep and merge overlapping ones."
    assert surface_diversity([plan] * 4) == pytest.approx(0.0)
    assert surface_diversity(["x", "x"]) == pytest.approx(0.0)  # shorter than 4 tokens


def test_disjoint_texts_have_full_diversity():
    texts = ["dynamic programming over prefixes", "greedy by deadline", "BFS from source", "x y z"]
    assert surface_diversity(texts) == 1.0


def test_no_shared_four_gram_is_full_diversity():
    # the study: D_surf = 1 when the texts share no 4-gram (add-one smoothing gave 0.573)
    a, b = "use dynamic programming over prefix sums", "use greedy choice over prefix sums"
    assert surface_diversity([a, b]) == 1.0
    assert surface_diversity([a, b], smoothing="add-one") == pytest.approx(0.573, abs=1e-3)
    assert surface_diversity(["sort it", "sort them"]) == 1.0  # too short for any 4-gram
    with pytest.raises(ValueError, match="unknown smoothing"):
        surface_diversity([a, b], smoothing="add-two")


def test_partial_overlap_is_in_between_and_ordered_pairs():
    a = "use a stack to match the brackets"
    b = "use a queue to match the brackets"
    d = surface_diversity([a, b])
    assert 0.0 < d < 1.0
    # mean over ordered pairs (a|b) and (b|a)
    assert self_bleu([a, b]) == pytest.approx((sentence_bleu(a, b) + sentence_bleu(b, a)) / 2)
    long = a + " and count the depth"
    assert sentence_bleu(long, a) != sentence_bleu(a, long)  # brevity penalty is one-sided


def test_tokenizer_splits_punctuation():
    assert tokenize("dp[i]=max(dp[i-1],x)") == [
        "dp", "[", "i", "]", "=", "max", "(", "dp", "[", "i", "-", "1", "]", ",", "x", ")",
    ]  # fmt: skip


def test_needs_two_texts():
    with pytest.raises(ValueError):
        surface_diversity(["only one"])


words = st.sampled_from(["sort", "the", "array", "then", "use", "dp", "graph", "(", ")", "x", "1"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(words, min_size=1, max_size=12), min_size=2, max_size=4))
def test_bleu_matches_sacrebleu_add_one(tuple_tokens):
    """sacrebleu with no tokenisation, add-k (k=1) smoothing, full order 4 is our BLEU-4."""
    from sacrebleu.metrics import BLEU

    oracle = BLEU(tokenize="none", smooth_method="add-k", smooth_value=1, effective_order=False)
    texts = [" ".join(t) for t in tuple_tokens]
    for hyp, ref in itertools.permutations(texts, 2):
        expected = oracle.sentence_score(hyp, [ref]).score / 100
        assert sentence_bleu(hyp, ref, "add-one") == pytest.approx(expected, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(words, min_size=1, max_size=12), min_size=2, max_size=4))
def test_bleu_matches_sacrebleu_unsmoothed(tuple_tokens):
    """sacrebleu with no tokenisation, no smoothing, full order 4 is the default BLEU-4
    (except token-identical texts under 4 tokens, which we score 1: they are duplicates)."""
    from sacrebleu.metrics import BLEU

    oracle = BLEU(tokenize="none", smooth_method="none", effective_order=False)
    texts = [" ".join(t) for t in tuple_tokens]
    for hyp, ref in itertools.permutations(texts, 2):
        if hyp == ref:
            assert sentence_bleu(hyp, ref) == 1.0
            continue
        expected = oracle.sentence_score(hyp, [ref]).score / 100
        assert sentence_bleu(hyp, ref) == pytest.approx(expected, abs=1e-9)
