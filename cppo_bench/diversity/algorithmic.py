"""Algorithmic diversity of a K-tuple: D_alg, the coverage of distinct categories of a fixed
taxonomy among the tuple's members, with labels from an LLM judge.

The judge is any inference backend (cppo_bench.backends): one batched generate() call labels
every plan (or program, for methods without plans) of every tuple, zero-shot, greedy. A reply
naming no category is labelled "other" and counted in `JudgeLabels.unparseable`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from cppo_bench.backends.base import Backend, GenRequest, ProgressFn, SamplingParams
from cppo_bench.util.termsafe import quote

TAXONOMY: tuple[str, ...] = (
    "DP",
    "greedy",
    "graph",
    "search/backtrack",
    "number-theory/math",
    "simulation",
    "data-structure",
    "divide-and-conquer",
    "brute-force",
    "other",
)
# What each category covers, shown to the judge next to its name.
_GLOSS = {
    "DP": "dynamic programming, memoised recursion over subproblems",
    "greedy": "a locally optimal choice at each step, often after sorting",
    "graph": "graphs and trees: BFS/DFS traversal, shortest paths, union-find, MST, topological order",
    "search/backtrack": "binary search on the answer, exhaustive search with pruning, backtracking",
    "number-theory/math": "formulas, combinatorics, primes, gcd, modular arithmetic, geometry",
    "simulation": "carrying out the process the statement describes step by step",
    "data-structure": "stacks, heaps, hash maps, segment / Fenwick trees, monotonic queues",
    "divide-and-conquer": "splitting the input, solving the parts, merging the results",
    "brute-force": "trying every candidate directly",
    "other": "none of the above",
}
# Spellings a reply may use for a category, matched as whole words, case-insensitively.
_ALIASES = {
    "DP": ("dp", "dynamic programming", "dynamic-programming", "memoization", "memoisation"),
    "greedy": ("greedy",),
    "graph": ("graph", "graphs"),
    "search/backtrack": ("search/backtrack", "backtracking", "backtrack", "search"),
    "number-theory/math": (
        "number-theory/math", "number theory", "number-theory", "mathematics", "math", "maths",
    ),
    "simulation": ("simulation", "simulate"),
    "data-structure": ("data-structure", "data structures", "data structure", "data-structures"),
    "divide-and-conquer": ("divide-and-conquer", "divide and conquer"),
    "brute-force": ("brute-force", "brute force", "bruteforce", "exhaustive"),
    "other": ("other",),
}  # fmt: skip
_ALIAS_RE = re.compile(
    r"(?<![a-z0-9])("
    + "|".join(
        re.escape(a)
        for a in sorted((a for v in _ALIASES.values() for a in v), key=len, reverse=True)
    )
    + r")(?![a-z0-9])"
)
_ALIAS_TO_LABEL = {a: label for label, aliases in _ALIASES.items() for a in aliases}

Kind = Literal["plan", "code"]
DEFAULT_PARAMS = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=16, seed=0)
MAX_ITEM_CHARS = 6000  # bounds a prompt: a long program is cut (its head shows the technique)


def _prompt(name: str) -> str:
    from cppo_bench.files import userfiles  # the one resolver and reader, as for any file

    folder = Path(str(resources.files("cppo_bench.diversity"))) / "prompts"
    return userfiles.read_text(userfiles.inside(folder, name, "prompt"), userfiles.MAX_SMALL)


def taxonomy_listing() -> str:
    return "\n".join(f"- {label}: {_GLOSS[label]}" for label in TAXONOMY)


def judge_request(
    item: str, kind: Kind = "plan", params: SamplingParams = DEFAULT_PARAMS
) -> GenRequest:
    """The zero-shot chat request that asks the judge for one item's category."""
    if kind not in ("plan", "code"):
        raise ValueError(f"kind must be 'plan' or 'code', got {quote(kind)}")
    template = _prompt("judge_plan.txt" if kind == "plan" else "judge_code.txt")
    text = item.strip()[:MAX_ITEM_CHARS] or "(empty)"
    user = template.replace("<<TAXONOMY>>", taxonomy_listing()).replace("<<ITEM>>", text)
    messages = (
        {"role": "system", "content": _prompt("judge_system.txt").strip()},
        {"role": "user", "content": user},
    )
    return GenRequest(params=params, messages=messages, tag=f"judge-{kind}")


def parse_label(reply: str) -> str | None:
    """The category a judge's reply names first (whole-word, case-insensitive); None if none."""
    match = _ALIAS_RE.search(reply.lower())
    return _ALIAS_TO_LABEL[match.group(1)] if match else None


@dataclass(frozen=True)
class JudgeLabels:
    labels: list[list[str]]  # per tuple, per member: a TAXONOMY category
    replies: list[list[str]]  # the judge's raw replies, same shape
    misses: list[int]  # per tuple: replies that named no category (labelled "other")
    unparseable: int  # all such replies
    total: int

    @property
    def unparseable_rate(self) -> float:
        return self.unparseable / self.total if self.total else 0.0


def label_tuples(
    tuples: Sequence[Sequence[str]],
    backend: Backend,
    kind: Kind = "plan",
    params: SamplingParams = DEFAULT_PARAMS,
    progress: ProgressFn | None = None,
) -> JudgeLabels:
    """Label every member of every tuple with one batched backend call."""
    requests = [judge_request(item, kind, params) for t in tuples for item in t]
    results = backend.generate(requests, progress) if requests else []
    if len(results) != len(requests):
        raise RuntimeError(
            f"judge backend returned {len(results)} results for {len(requests)} requests"
        )
    labels: list[list[str]] = []
    replies: list[list[str]] = []
    misses: list[int] = []
    pos = 0
    for t in tuples:
        texts = [r.text for r in results[pos : pos + len(t)]]
        pos += len(t)
        parsed = [parse_label(x) for x in texts]
        misses.append(sum(p is None for p in parsed))
        labels.append([p or "other" for p in parsed])
        replies.append(texts)
    return JudgeLabels(labels, replies, misses, sum(misses), len(requests))


def unique_categories(labels: Sequence[str]) -> int:
    unknown = set(labels) - set(TAXONOMY)
    if unknown:
        raise ValueError(f"labels outside the taxonomy: {', '.join(sorted(unknown))}")
    return len(set(labels))


def algorithmic_diversity(
    labels: Sequence[str], denominator: Literal["tuple", "taxonomy"] = "tuple"
) -> float:
    """D_alg of one tuple: distinct categories / tuple size (1.0: every member a different
    category), or / the taxonomy size with denominator="taxonomy"."""
    if not labels:
        raise ValueError("D_alg needs at least one label")
    # study Eq. (D_alg): |unique categories| / K (or / |taxonomy|)
    size = len(labels) if denominator == "tuple" else len(TAXONOMY)
    return unique_categories(labels) / size
