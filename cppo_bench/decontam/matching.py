"""Finding duplicate problems among many: exact canonical hashes, word n-gram overlap, and
shared source identifiers.

Fuzzy matching never compares texts pairwise. Every document becomes a set of 64-bit n-gram
hashes; all (hash, document) pairs are sorted once, and only documents that share a hash are
paired, so the cost follows the number of shared n-grams, not N^2. N-grams held by more than
`max_df` documents are judge boilerplate ("the first line contains one integer t ...") and are
skipped: they link unrelated problems and would make the pairing quadratic.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from cppo_bench.decontam.canonical import canonicalise
from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import quote

Metric = Literal["containment", "jaccard"]
MatchKind = Literal["exact", "fuzzy", "id"]
KINDS: tuple[MatchKind, ...] = ("exact", "fuzzy", "id")

_MULT = np.uint64(0x100000001B3)  # FNV prime; any odd 64-bit multiplier works


@dataclass(frozen=True)
class Fingerprint:
    """What matching needs of one problem."""

    sha256: str | None  # of the canonical text; None when the statement is empty
    grams: np.ndarray = field(repr=False)  # sorted unique uint64 n-gram hashes
    ids: frozenset[str] = frozenset()  # source identifier keys, e.g. "cf:1353D"


@dataclass(frozen=True)
class Match:
    """Two documents (indices into the fingerprint list, a < b) judged to be one problem."""

    a: int
    b: int
    kinds: tuple[MatchKind, ...]
    score: float  # n-gram similarity under the configured metric (0.0 when not shared)
    shared_ids: tuple[str, ...] = ()


_CF_URL_RE = re.compile(
    r"codeforces\.(?:com|ru)/(?:problemset/problem|contest|gym)/(\d+)/(?:problem/)?([A-Za-z]\d*)"
)
_ATCODER_URL_RE = re.compile(r"atcoder\.jp/contests/[^/]+/tasks/([A-Za-z0-9_]+)")
_LEETCODE_URL_RE = re.compile(r"leetcode\.(?:com|cn)/problems/([a-z0-9-]+)")
_LCB_CF_ID_RE = re.compile(r"^(\d+)_([A-Za-z]\d*)$")


def source_keys(problem: Problem) -> frozenset[str]:
    """Identifier keys naming a problem at its origin; two problems sharing one are the same.

    APPS ids are only unique within a split (train and test both count from 0), so the APPS
    key carries the split from `metadata["split"]` ("unknown" when a loader did not say).
    """
    src = problem.source
    keys: set[str] = set()
    if src.cf_contest_id is not None and src.cf_index:
        keys.add(f"cf:{src.cf_contest_id}{src.cf_index.upper()}")
    if src.apps_id is not None:
        split = problem.metadata.get("split") or problem.metadata.get("apps_split") or "unknown"
        keys.add(f"apps:{split}:{src.apps_id}")
    if src.lcb_question_id:
        qid = src.lcb_question_id
        keys.add(f"lcb:{qid}")
        platform = (src.platform or "").lower()
        m = _LCB_CF_ID_RE.match(qid)
        if platform == "codeforces" and m:
            keys.add(f"cf:{m.group(1)}{m.group(2).upper()}")
        elif platform == "atcoder":
            keys.add(f"atcoder:{qid.lower()}")
    if src.url:
        if m := _CF_URL_RE.search(src.url):
            keys.add(f"cf:{m.group(1)}{m.group(2).upper()}")
        elif m := _ATCODER_URL_RE.search(src.url):
            keys.add(f"atcoder:{m.group(1).lower()}")
        elif m := _LEETCODE_URL_RE.search(src.url):
            keys.add(f"leetcode:{m.group(1)}")
        else:
            url = re.sub(r"^[a-z]+://(www\.)?", "", src.url.strip().lower()).split("?")[0]
            keys.add(f"url:{url.rstrip('/')}")
    return frozenset(keys)


class _TokenHasher:
    """Stable 64-bit token hashes (blake2b), cached: the same text hashes the same in every run."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        cache = self._cache
        for tok in set(tokens).difference(cache):
            digest = hashlib.blake2b(tok.encode(), digest_size=8).digest()
            cache[tok] = int.from_bytes(digest, "little")
        return np.fromiter((cache[t] for t in tokens), dtype=np.uint64, count=len(tokens))


def ngram_hashes(token_hashes: np.ndarray, n: int) -> np.ndarray:
    """Sorted unique hashes of the word n-grams (a polynomial hash over the token hashes,
    wrapping mod 2^64). A text shorter than n words is one n-gram: itself."""
    m = len(token_hashes)
    if m == 0:
        return np.empty(0, dtype=np.uint64)
    width = min(n, m)
    count = m - width + 1
    h = np.zeros(count, dtype=np.uint64)
    for j in range(width):
        h = h * _MULT + token_hashes[j : j + count]
    return np.unique(h)


def fingerprints(problems: Iterable[Problem], ngram: int = 13) -> list[Fingerprint]:
    """Canonicalise and fingerprint each problem's statement."""
    if ngram < 1:
        raise ValueError(f"ngram must be >= 1, got {ngram}")
    hasher = _TokenHasher()
    out = []
    for problem in problems:
        text = canonicalise(problem.statement)
        tokens = text.split()
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest() if text else None
        out.append(Fingerprint(sha, ngram_hashes(hasher(tokens), ngram), source_keys(problem)))
    return out


def _pairs_from_groups(members: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """All (a, b) pairs, a < b, within each group; groups are runs of `members` given by
    (start, size). Vectorised per group size. Returns an (k, 2) int64 array."""
    chunks = []
    for g in np.unique(sizes):
        sel = starts[sizes == g]
        block = members[sel[:, None] + np.arange(g)]  # (groups, g), ascending within a row
        iu, ju = np.triu_indices(int(g), 1)
        chunks.append(np.stack([block[:, iu].ravel(), block[:, ju].ravel()], axis=1))
    if not chunks:
        return np.empty((0, 2), dtype=np.int64)
    return np.concatenate(chunks).astype(np.int64)


def shared_gram_counts(
    fps: Sequence[Fingerprint], max_df: int | None = 100
) -> dict[tuple[int, int], int]:
    """For every pair of documents sharing at least one n-gram, how many they share."""
    lengths = np.array([len(fp.grams) for fp in fps], dtype=np.int64)
    if lengths.sum() == 0:
        return {}
    grams = np.concatenate([fp.grams for fp in fps])
    docs = np.repeat(np.arange(len(fps), dtype=np.int64), lengths)
    order = np.argsort(grams, kind="stable")  # stable: documents ascend within a hash
    grams, docs = grams[order], docs[order]
    boundary = np.flatnonzero(np.diff(grams)) + 1
    starts = np.concatenate([[0], boundary])
    sizes = np.diff(np.concatenate([starts, [len(grams)]]))
    keep = sizes >= 2
    if max_df is not None:
        keep &= sizes <= max_df
    pairs = _pairs_from_groups(docs, starts[keep], sizes[keep])
    if len(pairs) == 0:
        return {}
    codes = pairs[:, 0] * len(fps) + pairs[:, 1]
    uniq, counts = np.unique(codes, return_counts=True)
    n = len(fps)
    return {(int(c // n), int(c % n)): int(k) for c, k in zip(uniq, counts, strict=True)}


def _groups(keys_per_doc: Iterable[Iterable[str]]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, keys in enumerate(keys_per_doc):
        for key in keys:
            groups[key].append(i)
    return groups


def similarity(shared: int, len_a: int, len_b: int, metric: Metric) -> float:
    if metric == "containment":
        denom = min(len_a, len_b)
    elif metric == "jaccard":
        denom = len_a + len_b - shared
    else:
        raise ValueError(f"unknown metric {quote(metric)} (containment | jaccard)")
    return shared / denom if denom else 0.0


def find_matches(
    fps: Sequence[Fingerprint],
    *,
    threshold: float = 0.5,
    metric: Metric = "containment",
    max_df: int | None = 100,
) -> list[Match]:
    """Every pair of documents that is an exact, fuzzy (n-gram similarity >= threshold) or
    identifier match, sorted by (a, b)."""
    similarity(0, 1, 1, metric)  # validate the metric before the expensive part
    kinds: dict[tuple[int, int], set[MatchKind]] = defaultdict(set)
    ids: dict[tuple[int, int], set[str]] = defaultdict(set)

    for members in _groups([fp.sha256] if fp.sha256 else [] for fp in fps).values():
        for x, a in enumerate(members):
            for b in members[x + 1 :]:
                kinds[(a, b)].add("exact")
    for key, members in _groups(fp.ids for fp in fps).items():
        for x, a in enumerate(members):
            for b in members[x + 1 :]:
                kinds[(a, b)].add("id")
                ids[(a, b)].add(key)

    scores: dict[tuple[int, int], float] = {}
    for (a, b), shared in shared_gram_counts(fps, max_df).items():
        score = similarity(shared, len(fps[a].grams), len(fps[b].grams), metric)
        scores[(a, b)] = score
        if score >= threshold:
            kinds[(a, b)].add("fuzzy")

    return [
        Match(
            a,
            b,
            tuple(k for k in KINDS if k in found),
            round(scores.get((a, b), 0.0), 4),
            tuple(sorted(ids.get((a, b), ()))),
        )
        for (a, b), found in sorted(kinds.items())
    ]
