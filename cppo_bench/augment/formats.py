"""The input format of a stdin problem, inferred from its own test inputs: the line
structure, what each token looks like (integer, decimal, word) with the ranges and lengths
seen, and which integer counts the tokens of a later line. Mutations stay inside it, so a
new input looks like the inputs the problem was written for."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_INT = re.compile(r"[+-]?\d{1,18}\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?\Z")


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

    def add(self, token: str) -> None:
        kind = token_kind(token)
        self.kinds.add(kind)
        if kind == "int":
            v = int(token)
            self.lo = v if self.lo is None else min(self.lo, v)
            self.hi = v if self.hi is None else max(self.hi, v)
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


@dataclass
class InputFormat:
    """fixed: every input has the same number of lines, so slots are keyed by (line, column);
    otherwise lines with the same number of tokens share slots, keyed by (-n_tokens, column).
    counts: (line, column) of an integer -> the line whose token count it equals in every
    input (e.g. "n" then n numbers); only found for fixed formats."""

    fixed: bool
    slots: dict[tuple[int, int], Slot]
    counts: dict[tuple[int, int], list[int]]
    n_inputs: int
    allows_zero_count: bool = False  # a count of 0 (an empty list) was seen

    def slot_key(self, line: int, col: int, n_tokens: int) -> tuple[int, int]:
        return (line, col) if self.fixed else (-n_tokens, col)

    def slot(self, line: int, col: int, n_tokens: int) -> Slot:
        """What was seen here; on a line of 3+ tokens (a list), over the whole line."""
        if n_tokens >= 3:
            pooled = self.slots.get((self.slot_key(line, col, n_tokens)[0], -1))
            if pooled is not None:
                return pooled
        return self.slots.get(self.slot_key(line, col, n_tokens)) or Slot()

    def describe(self) -> str:
        kinds = sorted({s.kind for s in self.slots.values()})
        shape = "fixed lines" if self.fixed else "variable lines"
        return f"{shape}, {len(self.slots)} slots ({', '.join(kinds)}), {len(self.counts)} counts"


def infer_format(inputs: Sequence[str]) -> InputFormat:
    """The format of `inputs`. Slots are keyed by line only with three or more inputs of one
    line count (fewer show one value per place, so nothing could vary); counts are looked
    for whenever the line count is the same (one input included)."""
    parsed = [lines_of(text) for text in inputs]
    same_lines = len(parsed) > 0 and len({len(p) for p in parsed}) == 1
    fixed = same_lines and len(parsed) >= 3
    slots: dict[tuple[int, int], Slot] = {}
    for lines in parsed:
        for i, toks in enumerate(lines):
            for j, tok in enumerate(toks):
                key = (i, j) if fixed else (-len(toks), j)
                slots.setdefault(key, Slot()).add(tok)
                if len(toks) >= 3:  # a list: its values share one range (column -1)
                    slots.setdefault((key[0], -1), Slot()).add(tok)
    counts: dict[tuple[int, int], list[int]] = {}
    zero = False
    if same_lines:
        for target in range(1, len(parsed[0])):
            # an integer on one of the two lines before that equals the line's length in
            # every input, and reaches 3 in one (a 1 or 2 equal to a length is a coincidence
            # as often as not)
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
    counts = {k: ts for k, ts in counts.items() if k[0] not in targets}
    return InputFormat(fixed, slots, counts, len(parsed), zero)


def _is_count(lines: list[list[str]], i: int, j: int, target: int) -> bool:
    if j >= len(lines[i]) or token_kind(lines[i][j]) != "int":
        return False
    return int(lines[i][j]) == len(lines[target])
