"""Candidate stdin inputs: a token-stream mutation of the problem's own inputs, guided by
their inferred format (cppo_bench.augment.formats), plus boundary cases.

Every candidate says how it was made ({"mutation": ..., "parent": test index}); with the
same inputs and the same `random.Random` the same candidates come out, in the same order.
Values stay inside what the problem's inputs showed (integer ranges, word lengths and
characters, list lengths up to the longest seen), since the statement's constraints are
not machine-readable: a mutation that leaves them is what the oracle's "no reference
crashes" rule catches, not something to count on.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cppo_bench.augment.formats import InputFormat, Slot, infer_format, lines_of, token_kind

MAX_PARENT_CHARS = 1 << 16  # mutate small inputs only: a huge one costs every reference
Lines = list[list[str]]


@dataclass(frozen=True)
class Candidate:
    input: str
    how: dict  # {"mutation": names joined by "+", "parent": test index}


def render(lines: Lines) -> str:
    return "\n".join(" ".join(toks) for toks in lines) + "\n"


def _int_in(slot: Slot, rng: random.Random, near: int) -> int:
    lo, hi = slot.lo, slot.hi
    if lo is None or hi is None:
        return near
    v = rng.choice([lo, hi, rng.randint(lo, hi), min(hi, near + 1), max(lo, near - 1)])
    if len(slot.parities) == 1 and v % 2 not in slot.parities:  # only even (odd) values seen
        v = v + 1 if v + 1 <= hi else v - 1
    return v


def _is_count(fmt: InputFormat, i: int, j: int) -> bool:
    return (i, j) in fmt.counts or (i, j) in fmt.lengths


def _ints(fmt: InputFormat, lines: Lines) -> list[tuple[int, int]]:
    """Integers free to change: not counts or lengths, and in a place where only integers
    were seen (a "111" among bit strings is a word)."""
    return [
        (i, j)
        for i, toks in enumerate(lines)
        for j, tok in enumerate(toks)
        if token_kind(tok) == "int"
        and not _is_count(fmt, i, j)
        and fmt.slot(i, j, len(toks)).kind == "int"
    ]


def int_tweak(fmt: InputFormat, lines: Lines, rng: random.Random) -> bool:
    places = _ints(fmt, lines)
    if not places:
        return False
    i, j = rng.choice(places)
    slot = fmt.slot(i, j, len(lines[i]))
    lines[i][j] = str(_int_in(slot, rng, int(lines[i][j])))
    return True


def word_tweak(fmt: InputFormat, lines: Lines, rng: random.Random) -> bool:
    places = [
        (i, j) for i, t in enumerate(lines) for j, w in enumerate(t) if token_kind(w) == "word"
    ]
    if not places:
        return False
    i, j = rng.choice(places)
    slot = fmt.slot(i, j, len(lines[i]))
    word = list(lines[i][j])
    if i in fmt.lengths.values() and len(word) > 1:
        # a word whose length a count gives: keep its length and its characters (a string
        # with "n/2 zeros", "balanced brackets" stays one)
        a, b = rng.sample(range(len(word)), 2)
        word[a], word[b] = word[b], word[a]
        lines[i][j] = "".join(word)
        return True
    chars = sorted(slot.chars) or sorted(set(word))
    lo, hi = slot.min_len or 1, slot.max_len or len(word)
    op = rng.choice(["replace", "insert", "delete"])
    if op == "insert" and len(word) < hi:
        word.insert(rng.randint(0, len(word)), rng.choice(chars))
    elif op == "delete" and len(word) > max(lo, 1):
        del word[rng.randrange(len(word))]
    else:
        word[rng.randrange(len(word))] = rng.choice(chars)
    lines[i][j] = "".join(word)
    return True


def _lists(fmt: InputFormat, lines: Lines) -> list[int]:
    """Lines that are lists of one kind of token (never "n k": swapping those is no
    permutation of a list but another input, often outside the constraints)."""
    return [
        i
        for i, t in enumerate(lines)
        if len(t) > 1 and fmt.is_list(i, len(t)) and len({token_kind(x) for x in t}) == 1
    ]


def swap(fmt: InputFormat, lines: Lines, rng: random.Random) -> bool:
    rows = _lists(fmt, lines)
    if not rows:
        return False
    i = rng.choice(rows)
    if rng.random() < 0.5:
        a, b = rng.sample(range(len(lines[i])), 2)
        lines[i][a], lines[i][b] = lines[i][b], lines[i][a]
    else:
        rng.shuffle(lines[i])
    return True


def duplicate(fmt: InputFormat, lines: Lines, rng: random.Random) -> bool:
    """Make two tokens of a list equal (duplicates are a classic missed case)."""
    rows = _lists(fmt, lines)
    if not rows:
        return False
    i = rng.choice(rows)
    a, b = rng.sample(range(len(lines[i])), 2)
    lines[i][b] = lines[i][a]
    return True


def resize(fmt: InputFormat, lines: Lines, rng: random.Random, size: int | None = None) -> bool:
    """Change a count and the lines it counts together: drop elements or add ones drawn
    from the values seen."""
    if not fmt.counts:
        return False
    (i, j), targets = rng.choice(sorted(fmt.counts.items()))
    slot = fmt.slot(i, j, len(lines[i]))
    lo = 0 if fmt.allows_zero_count else max(1, slot.lo or 1)
    hi = max(slot.hi or 1, lo)
    n = size if size is not None else rng.randint(lo, hi)
    n = max(lo, min(hi, n))
    for t in targets:
        row = lines[t]
        if n <= len(row):
            keep = sorted(rng.sample(range(len(row)), n))
            lines[t] = [row[k] for k in keep]
        else:
            pool = row or ["0"]
            lines[t] = row + [
                str(_int_in(fmt.slot(t, 0, 1), rng, int(v))) if token_kind(v) == "int" else v
                for v in (rng.choice(pool) for _ in range(n - len(row)))
            ]
    lines[i][j] = str(n)
    return True


MUTATIONS: dict[str, Callable[[InputFormat, Lines, random.Random], bool]] = {
    "int_tweak": int_tweak,
    "word_tweak": word_tweak,
    "swap": swap,
    "duplicate": duplicate,
    "resize": resize,
}


def boundary(fmt: InputFormat, lines: Lines) -> list[tuple[str, Lines]]:
    """Smallest and largest values seen everywhere, and single / empty lists where the
    format has counts (empty only where an empty list was seen)."""
    out = []
    for name, pick in (("all_min", lambda s: s.lo), ("all_max", lambda s: s.hi)):
        new = [list(t) for t in lines]
        for i, j in _ints(fmt, new):
            v = pick(fmt.slot(i, j, len(new[i])))
            if v is not None:
                new[i][j] = str(v)
        out.append((name, new))
    sizes = [("single", 1)] + ([("empty", 0)] if fmt.allows_zero_count else [])
    for name, n in sizes:
        if not fmt.counts:
            break
        new = [list(t) for t in lines]
        for (i, j), targets in sorted(fmt.counts.items()):
            for t in targets:
                new[t] = new[t][:n]
            new[i][j] = str(len(new[targets[0]]))
        out.append((name, new))
    return out


def stdin_candidates(inputs: Sequence[str], n: int, rng: random.Random) -> list[Candidate]:
    """Up to `n` new distinct inputs: boundary cases of the first usable parent first, then
    random 1-3 step mutations of random parents."""
    fmt = infer_format(inputs)
    parents = [(k, lines_of(x)) for k, x in enumerate(inputs) if len(x) <= MAX_PARENT_CHARS]
    parents = [(k, p) for k, p in parents if p]
    if not parents or n <= 0:
        return []
    seen = {render(p) for _, p in parents}
    out: list[Candidate] = []

    def keep(lines: Lines, how: dict) -> None:
        text = render(lines)
        if text not in seen and len(out) < n and fmt.respects(lines):
            seen.add(text)
            out.append(Candidate(text, how))

    k0, first = parents[0]
    for name, lines in boundary(fmt, first):
        keep(lines, {"mutation": name, "parent": k0})
    names = sorted(MUTATIONS)
    for _ in range(20 * n):  # attempts: most formats give many more distinct inputs than n
        if len(out) >= n:
            break
        k, parent = rng.choice(parents)
        lines = [list(t) for t in parent]
        done = []
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(names)
            if MUTATIONS[name](fmt, lines, rng):
                done.append(name)
        if done:
            keep(lines, {"mutation": "+".join(done), "parent": k})
    return out
