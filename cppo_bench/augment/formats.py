"""The input format of a stdin problem, inferred from its own test inputs: the line
structure, what each token looks like (integer, decimal, word) with the ranges and lengths
seen, and which integer counts the tokens of a later line. Mutations stay inside it, so a
new input looks like the inputs the problem was written for."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_INT = re.compile(r"\A[+-]?\d{1,18}\Z")
_FLOAT = re.compile(r"\A[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?\Z")


def token_kind(token: str) -> str:
    """int, float or word; "0011" is a word (a bit string, not the number 11)."""
    if token.lstrip("+-").startswith("0") and len(token.lstrip("+-")) > 1:
        return "float" if _FLOAT.match(token) and "." in token else "word"
    if _INT.match(token):
        return "int"
    if _FLOAT.match(token):
        return "float"
    return "word"


def lines_of(text: str) -> list[list[str]]:
    """The input as lines of whitespace-separated tokens (trailing blank lines dropped)."""
    lines = [line.split() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@dataclass
class Slot:
    """What was seen at one place of the format."""

    kinds: set[str] = field(default_factory=set)
    lo: int | None = None  # integer range seen
    hi: int | None = None
    min_len: int | None = None  # word lengths seen
    max_len: int | None = None
    chars: set[str] = field(default_factory=set)
    parities: set[int] = field(default_factory=set)  # v % 2 of the integers seen

    def add(self, token: str) -> None:
        kind = token_kind(token)
        self.kinds.add(kind)
        if kind == "int":
            v = int(token)
            self.lo = v if self.lo is None else min(self.lo, v)
            self.hi = v if self.hi is None else max(self.hi, v)
            self.parities.add(v % 2)
        elif kind == "word":
            n = len(token)
            self.min_len = n if self.min_len is None else min(self.min_len, n)
            self.max_len = n if self.max_len is None else max(self.max_len, n)
            self.chars.update(token)

    @property
    def kind(self) -> str:
        """One kind when every token seen here had it; "mixed" otherwise."""
        if self.kinds == {"int"}:
            return "int"
        if self.kinds <= {"int", "float"}:
            return "float"
        return "word" if self.kinds == {"word"} else "mixed"


LIST_MIN = 4  # tokens on a line that make it a list (else: a few named values, "n k")
ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
         ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}  # fmt: skip


@dataclass
class InputFormat:
    """fixed: three or more inputs with the same number of lines: slots are keyed by (line,
    column); otherwise lines with the same number of tokens share slots, keyed by
    (-n_tokens, column); column -1 pools a list line's values.
    counts: (line, column) of an integer -> the lines whose token count it equals in every
    input ("n" then n numbers); lengths: (line, column) of an integer -> the line whose one
    word it is the length of ("n" then a string of n characters); relations: per line key,
    the order (<, <=, >, >=) that held between two integers of a short line in every input
    ("n k" with k <= n). Counts, lengths and relations are what a statement's constraints
    most often say that a token-level mutation would otherwise break."""

    fixed: bool
    slots: dict[tuple[int, int], Slot]
    counts: dict[tuple[int, int], list[int]]
    n_inputs: int
    allows_zero_count: bool = False  # a count of 0 (an empty list) was seen
    lengths: dict[tuple[int, int], int] = field(default_factory=dict)
    relations: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    distinct_lists: bool = False  # every list seen had no repeated value
    permutations: bool = False  # every list seen was a permutation of 1..its length

    def slot_key(self, line: int, col: int, n_tokens: int) -> tuple[int, int]:
        return (line, col) if self.fixed else (-n_tokens, col)

    def is_list(self, line: int, n_tokens: int) -> bool:
        return n_tokens >= LIST_MIN or any(line in t for t in self.counts.values())

    def slot(self, line: int, col: int, n_tokens: int) -> Slot:
        """What was seen here; on a list line, over the whole line."""
        if self.is_list(line, n_tokens):
            pooled = self.slots.get((self.slot_key(line, col, n_tokens)[0], -1))
            if pooled is not None:
                return pooled
        return self.slots.get(self.slot_key(line, col, n_tokens)) or Slot()

    def respects(self, lines: list[list[str]]) -> bool:
        """The lengths and order relations hold in `lines` (a mutated input)."""
        try:
            for (i, j), t in self.lengths.items():
                if int(lines[i][j]) != len(lines[t][0]):
                    return False
        except (IndexError, ValueError):
            return False
        for i, toks in enumerate(lines):
            if toks and self.is_list(i, len(toks)):
                if self.distinct_lists and len(set(toks)) < len(toks):
                    return False
                if self.permutations and sorted(toks, key=_num) != [
                    str(v) for v in range(1, len(toks) + 1)
                ]:
                    return False
            if not 2 <= len(toks) < LIST_MIN or any(token_kind(x) != "int" for x in toks):
                continue
            key = self.slot_key(i, 0, len(toks))[0]
            for a, b, op in self.relations.get(key, ()):
                if not ORDER[op](int(toks[a]), int(toks[b])):
                    return False
        return True

    def describe(self) -> str:
        kinds = sorted({s.kind for s in self.slots.values()})
        shape = "fixed lines" if self.fixed else "variable lines"
        return (f"{shape}, {len(self.slots)} slots ({', '.join(kinds)}), {len(self.counts)} "
                f"counts, {len(self.lengths)} lengths, "
                f"{sum(map(len, self.relations.values()))} relations")  # fmt: skip


def infer_format(inputs: Sequence[str]) -> InputFormat:
    """The format of `inputs`. Slots are keyed by line only with three or more inputs of one
    line count (fewer show one value per place, so nothing could vary); counts and lengths
    are looked for whenever the line count is the same (one input included)."""
    parsed = [lines_of(text) for text in inputs]
    same_lines = len(parsed) > 0 and len({len(p) for p in parsed}) == 1
    fixed = same_lines and len(parsed) >= 3
    counts, zero = _counts(parsed) if same_lines else ({}, False)
    targets = {t for ts in counts.values() for t in ts}
    slots: dict[tuple[int, int], Slot] = {}
    for lines in parsed:
        for i, toks in enumerate(lines):
            for j, tok in enumerate(toks):
                key = (i, j) if fixed else (-len(toks), j)
                slots.setdefault(key, Slot()).add(tok)
                if len(toks) >= LIST_MIN or i in targets:  # a list: one pooled range
                    slots.setdefault((key[0], -1), Slot()).add(tok)
    lengths = _lengths(parsed) if same_lines else {}
    lists = [toks for lines in parsed for i, toks in enumerate(lines)
             if len(toks) >= LIST_MIN or i in targets]  # fmt: skip
    lists = [t for t in lists if len(t) > 1]
    distinct = bool(lists) and all(len(set(t)) == len(t) for t in lists)
    perms = bool(lists) and all(
        sorted(t, key=_num) == [str(v) for v in range(1, len(t) + 1)] for t in lists
    )
    return InputFormat(fixed, slots, counts, len(parsed), zero, lengths,
                       _relations(parsed, fixed), distinct, perms)  # fmt: skip


def _counts(parsed: list[list[list[str]]]) -> tuple[dict[tuple[int, int], list[int]], bool]:
    counts: dict[tuple[int, int], list[int]] = {}
    zero = False
    for target in range(1, len(parsed[0])):
        # an integer on one of the two lines before that equals the line's length in every
        # input, and reaches 3 in one (a 1 or 2 equal to a length is a coincidence as often
        # as not)
        found = next(
            (
                (i, j)
                for i in range(max(0, target - 2), target)
                for j in range(len(parsed[0][i]))
                if all(_is_count(p, i, j, target) for p in parsed)
                and max(int(p[i][j]) for p in parsed) >= 3
                and len({token_kind(x) for p in parsed for x in p[target]}) <= 1
            ),
            None,
        )
        if found is not None:
            counts.setdefault(found, []).append(target)
            zero = zero or any(not p[target] for p in parsed)
    # a count inside a counted line would be resized away by its own count: not a count
    targets = {t for ts in counts.values() for t in ts}
    return {k: ts for k, ts in counts.items() if k[0] not in targets}, zero


def _lengths(parsed: list[list[list[str]]]) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    for t in range(1, len(parsed[0])):
        if not all(len(p[t]) == 1 and token_kind(p[t][0]) == "word" for p in parsed):
            continue
        for i in range(max(0, t - 2), t):
            js = [j for j in range(len(parsed[0][i]))
                  if all(_is_len(p, i, j, t) for p in parsed)]  # fmt: skip
            if js:
                out[(i, js[0])] = t
                break
    return out


def _relations(parsed: list[list[list[str]]], fixed: bool) -> dict[int, list[tuple[int, int, str]]]:
    seen: dict[int, list[list[int]]] = {}
    for lines in parsed:
        for i, toks in enumerate(lines):
            if 2 <= len(toks) < LIST_MIN and all(token_kind(x) == "int" for x in toks):
                seen.setdefault(i if fixed else -len(toks), []).append([int(x) for x in toks])
    out: dict[int, list[tuple[int, int, str]]] = {}
    for key, rows in seen.items():
        n = len(rows[0])
        for a in range(n):
            for b in range(a + 1, n):
                op = next((o for o in ("<", ">", "<=", ">=")
                           if all(ORDER[o](r[a], r[b]) for r in rows)), None)  # fmt: skip
                if op is not None:
                    out.setdefault(key, []).append((a, b, op))
    return out


def _num(token: str) -> tuple[int, str]:
    return (int(token), token) if token_kind(token) == "int" else (0, token)


def _is_len(lines: list[list[str]], i: int, j: int, target: int) -> bool:
    if j >= len(lines[i]) or token_kind(lines[i][j]) != "int":
        return False
    return int(lines[i][j]) == len(lines[target][0])


def _is_count(lines: list[list[str]], i: int, j: int, target: int) -> bool:
    if j >= len(lines[i]) or token_kind(lines[i][j]) != "int":
        return False
    return int(lines[i][j]) == len(lines[target])
