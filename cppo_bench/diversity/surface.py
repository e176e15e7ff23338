"""Surface diversity of a K-tuple: D_surf = 1 - Self-BLEU-4, the mean sentence BLEU-4 of each
member against each other member (ordered pairs i != j).

BLEU-4 here: whitespace/punctuation tokens (a run of word characters, or one punctuation
character), clipped n-gram precisions for n = 1..4 with uniform weights and the brevity
penalty exp(1 - r/c) when the hypothesis is shorter than the reference.

Smoothing: the study defines D_surf = 1 when the texts share no 4-gram, which is plain
(unsmoothed) BLEU-4: a zero 4-gram precision makes the pair's BLEU 0. That is the default,
`smoothing="none"`. `smoothing="add-one"` keeps the earlier variant (add-one on the n >= 2
precisions, Lin & Och 2004; sacrebleu's "add-k" with k = 1), which gives pairs sharing words
but no 4-gram a D_surf below 1. Two token-identical texts always score BLEU 1, even when
shorter than 4 tokens.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from cppo_bench.util.termsafe import quote

MAX_N = 4
Smoothing = Literal["none", "add-one"]
SMOOTHINGS: tuple[str, ...] = ("none", "add-one")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Words (runs of letters, digits, underscore) and single punctuation characters."""
    return _TOKEN.findall(text)


def _ngrams(tokens: Sequence[str], max_n: int = MAX_N) -> list[Counter[tuple[str, ...]]]:
    return [
        Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
        for n in range(1, max_n + 1)
    ]


def _bleu_counts(
    hyp: list[Counter[tuple[str, ...]]],
    hyp_len: int,
    ref: list[Counter[tuple[str, ...]]],
    ref_len: int,
    smoothing: Smoothing = "none",
) -> float:
    if hyp_len == 0 or ref_len == 0:
        return 1.0 if hyp_len == ref_len else 0.0  # two empty texts are identical
    if hyp_len == ref_len and hyp == ref:
        return 1.0  # same n-gram bags (token-identical): D_surf 0 even below 4 tokens
    log_sum = 0.0
    for n, (h, r) in enumerate(zip(hyp, ref, strict=True), start=1):
        # study Eq. (BLEU-4): clipped n-gram precision, min(count_hyp, count_ref)
        matches = sum(min(c, r[g]) for g, c in h.items())
        total = sum(h.values())
        if n > 1 and smoothing == "add-one":  # Lin & Och 2004, n >= 2 only
            matches, total = matches + 1, total + 1
        if matches == 0:  # also a text shorter than n tokens: no n-gram, precision 0
            return 0.0
        log_sum += math.log(matches / total)
    # study Eq. (BLEU-4): brevity penalty exp(1 - r/c) for c < r, geometric mean of p_1..p_4
    bp = 1.0 if hyp_len >= ref_len else math.exp(1.0 - ref_len / hyp_len)
    return bp * math.exp(log_sum / MAX_N)


def _check(smoothing: str) -> None:
    if smoothing not in SMOOTHINGS:
        raise ValueError(f"unknown smoothing {quote(smoothing)}; known: {', '.join(SMOOTHINGS)}")


def sentence_bleu(hypothesis: str, reference: str, smoothing: Smoothing = "none") -> float:
    """BLEU-4 of one text against one reference, in [0, 1] (see the module docstring)."""
    _check(smoothing)
    h, r = tokenize(hypothesis), tokenize(reference)
    return _bleu_counts(_ngrams(h), len(h), _ngrams(r), len(r), smoothing)


def self_bleu(texts: Sequence[str], smoothing: Smoothing = "none") -> float:
    """Mean BLEU-4 over ordered pairs (i, j), i != j: text i scored against text j."""
    if len(texts) < 2:
        raise ValueError(f"Self-BLEU needs at least 2 texts, got {len(texts)}")
    _check(smoothing)
    toks = [tokenize(t) for t in texts]
    grams = [_ngrams(t) for t in toks]
    scores = [
        _bleu_counts(grams[i], len(toks[i]), grams[j], len(toks[j]), smoothing)
        for i in range(len(texts))
        for j in range(len(texts))
        if i != j
    ]
    return sum(scores) / len(scores)


def surface_diversity(texts: Sequence[str], smoothing: Smoothing = "none") -> float:
    """D_surf = 1 - Self-BLEU-4 of a tuple: 0 for identical texts, 1 for texts sharing no
    4-gram (the study's definition; with add-one smoothing only for texts sharing no token)."""
    # study Eq. (D_surf): 1 - mean_{i != j} BLEU-4(t_i, t_j)
    return 1.0 - self_bleu(texts, smoothing)
