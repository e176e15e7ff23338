"""Output comparison rules, one per benchmark, each named after the official evaluator it
mirrors. `Problem.checker` picks one. They run OUTSIDE the sandbox: the program never sees
an expected output. Written from the official logic, not copied from it:

- apps (hendrycks/apps eval/testing_util.py): stdin output accepted at the first stage that
  matches: (1) whole output equal after stripping its ends, also with every line stripped;
  (2) the output's lines equal the expected's non-empty stripped lines, first as printed,
  then without empty lines; (3) every line a number and all within numpy `allclose`
  (rtol 1e-5, atol 1e-8); (4) the SET of lines, each line a SET of whitespace tokens, is
  equal (this is how the official checker accepts the rows with several correct answers);
  (5) the same with every token rounded to 3 decimals. Call results: equal with Python
  `==` after a returned tuple becomes a list, or equal to the expected value's first
  element (Codewars rows wrap outputs in one extra list), or, for a list of tuples, equal
  as lists. JSON's string keys of a dict argument are turned back into ints.
- codecontests (deepmind/code_contests execution/tester_sandboxer.cc `OutputsMatch`):
  split both on whitespace, lower-case; equal token lists match; otherwise same length and
  every token pair equal, or both numbers within absolute 1e-5.
- lcb (LiveCodeBench lcb_runner/evaluation/testing_util.py): stdin output and expected
  stripped, split into lines, each line stripped; same number of lines, each line equal, or
  its whitespace tokens equal as `Decimal`s. Call results (functional): equal to the JSON
  expected value with Python `==`, a returned tuple first becoming a list.
- exact: the output equals the expected text after normalising CRLF and dropping trailing
  whitespace at the end; call results must equal the JSON value with JSON types (1 != 1.0,
  True != 1; a tuple counts as an array).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from cppo_bench.util.registry import Registry
from cppo_bench.verifier.compare_text import (
    DIGEST_ABOVE,
    concat_equals,
    digests_equal,
    equal_iter,
    iter_split,
    iter_splitlines,
    iter_tokens,
    joined_lines,
    joined_stripped_lines,
    set_of_sets_equal,
)
from cppo_bench.verifier.decode import DecodedDict, DecodedSet


@dataclass(frozen=True)
class Checker:
    name: str
    mirrors: str  # the official evaluator this rule reproduces
    stdin: Callable[[str, str], bool]  # (program output, expected output) -> match
    call: Callable[[Any, Any], bool]  # (returned value, expected JSON value) -> match
    stdin_prelude: str = "none"  # names the official harness defines (see child.PRELUDES)
    call_prelude: str = "lcb"
    int_keys: bool = False  # turn a dict argument's JSON string keys back into ints
    sysexit_ok: bool = False  # sys.exit(n) still "finishes" (APPS swallows SystemExit)


CHECKERS: Registry[Checker] = Registry("checker")


def get_checker(name: str) -> Checker:
    return CHECKERS.get(name)


def _safe(fn: Callable[..., bool]) -> Callable[..., bool]:
    """A comparison that raises (odd types, overflow) is a mismatch, as in the originals."""

    def wrapped(*args: Any) -> bool:
        try:
            return bool(fn(*args))
        except (ArithmeticError, TypeError, ValueError, IndexError, KeyError, RecursionError):
            return False

    wrapped.__name__ = fn.__name__
    return wrapped


# ---- apps -------------------------------------------------------------------------------------


def _try(fn: Callable[[], bool]) -> bool:
    try:
        return fn()
    except (ArithmeticError, TypeError, ValueError):
        return False


# every line break of str.splitlines() but "\n" (see apps_stdin's shortcut)
OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


@_safe
def apps_stdin(output: str, expected: str) -> bool:
    # The official rule on `lines = output.splitlines()`, with both sides only ever streamed
    # (compare_text): see the module doc for the stages.
    want = expected.strip()
    stripped = output.strip()
    if stripped == want and not OTHER_BREAKS.search(stripped):
        return True  # (the first stage's answer, in C: "\n" is the only break in either)
    if concat_equals(joined_lines(output), want):
        return True
    if concat_equals(joined_stripped_lines(output), want):
        return True

    def want_lines() -> Iterator[str]:
        return (line.strip() for line in iter_split(expected, "\n") if line)

    if equal_iter(iter_splitlines(output), want_lines(), _eq):
        return True

    def got() -> Iterator[str]:
        return (line for line in iter_splitlines(output) if line)

    if equal_iter(got(), want_lines(), _eq):
        return True
    if _try(lambda: _allclose_seq(got(), want_lines())):
        return True

    def rounded(token: str) -> float:
        return _round3(float(token))

    if len(expected) > DIGEST_ABOVE:  # bounded memory: 8 bytes a line (compare_text)
        if digests_equal(got(), want_lines(), str):
            return True
        return _try(lambda: digests_equal(got(), want_lines(), rounded))
    want_sets = [set(iter_tokens(line)) for line in want_lines()]
    if set_of_sets_equal(got(), {frozenset(s) for s in want_sets}, key=str):
        return True

    def rounded_text(token: str) -> str:
        return _set_key(rounded(token))

    return _try(
        lambda: set_of_sets_equal(
            got(), {frozenset(map(rounded_text, s)) for s in want_sets}, rounded_text
        )
    )


def _round3(x: float) -> float:
    """round(x, 3), in constant time: a float of magnitude 2**52 or more is an integer,
    which rounding leaves as it is, but round() still prints all its digits (40 us for
    1e308: a 2 MB output of `1e308` tokens cost seconds of the judge's CPU per stage)."""
    if not -4503599627370496.0 < x < 4503599627370496.0:  # (inf, NaN: as round does)
        return x if x == x else round(x, 3)
    return round(x, 3)


def _set_key(x: float) -> str:
    """A rounded token as the text that decides its set membership, so that no set ever
    hashes a float the program chose: float hashes are fixed (a few thousand distinct
    floats share one), and a line of colliding floats made each set insertion walk every
    earlier one (a 2 MB wrong answer cost 5.8 CPU-s). Strings hash with a per-process key.
    Equal floats have equal text once -0.0 is 0.0; a NaN equals nothing, so a NaN token
    makes its line match no line (ValueError: the stage fails, as upstream's sets do)."""
    if x != x:
        raise ValueError("nan")
    return repr(x + 0.0)


def _eq(a: object, b: object) -> bool:
    return a == b


def _allclose_seq(got: Iterator[str], want: Iterator[str]) -> bool:
    """numpy.allclose over float(line) of both sides (rtol 1e-5, atol 1e-8), streamed; any
    non-number raises ValueError as in the original's list comprehensions (a mismatch
    either way, and a bool result cannot tell which came first)."""
    return equal_iter(map(float, got), map(float, want), _close)


def _close(x: float, y: float) -> bool:
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= 1e-8 + 1e-5 * abs(y)  # NaN compares false: a mismatch


@_safe
def apps_call(value: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        expected = [_try_int_keys(expected)]
    elif isinstance(expected, list) and expected and isinstance(expected[0], dict):
        expected = [_try_int_keys(expected[0])]
    if isinstance(value, tuple):
        value = list(value)
    if value == expected:
        return True
    if isinstance(expected, list) and expected and value == expected[0]:
        return True
    return _try(lambda: isinstance(value[0], tuple) and [list(x) for x in value] == expected[0])


def _try_int_keys(d: dict) -> dict:
    try:
        return {int(k): v for k, v in d.items()}
    except (TypeError, ValueError):
        return d


# ---- codecontests -----------------------------------------------------------------------------

# What absl::SimpleAtod accepts (no hex, no digit separators), on a lower-cased token.
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf|infinity|nan)")


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _iter_tokens(text: str) -> Iterator[str]:
    """absl::StrSplit on any of " \n\t\r\v", skipping empties, then ASCII lower-case."""
    return (m.group() for m in _CC_TOKEN.finditer(text.translate(_LOWER)))


_CC_TOKEN = re.compile("[^ \n\t\r\v]+")


def _as_number(token: str) -> float | None:
    if not _NUMBER.fullmatch(token) or token.startswith("+-"):
        return None
    return float(token)


@_safe
def codecontests_stdin(output: str, expected: str) -> bool:
    # Upstream: equal token lists, or same length and every pair equal or both numbers
    # within 1e-5. Both conditions are tracked in one streaming pass over the output.
    if output.strip() == expected.strip():
        return True  # (the same text: the same tokens; a large correct output costs no loop)
    want = list(_iter_tokens(expected))
    identical = close = True
    n = 0
    for a in _iter_tokens(output):
        if n >= len(want):
            return False
        b = want[n]
        n += 1
        identical = identical and a == b
        if close:
            x, y = _as_number(a), _as_number(b)
            close = a == b if x is None or y is None else abs(x - y) < 1e-5
        if not (identical or close):
            return False
    return n == len(want)


# ---- lcb --------------------------------------------------------------------------------------


@_safe
def lcb_stdin(output: str, expected: str) -> bool:
    # Both sides streamed line by line and token by token (a 100 MB expected line must not
    # become millions of Decimals): pairwise equality decides the same as the original's
    # lists, since any invalid token or any unequal pair makes the line a mismatch.
    def same_line(a: str, b: str) -> bool:
        a = a.strip()
        if a == b:
            return True
        try:
            return equal_iter(iter_tokens(a), iter_tokens(b), _decimal_eq)
        except (InvalidOperation, ValueError):
            return False

    got = output.strip()
    if got == expected.strip():
        return True  # (the same text: the same lines; a large correct output costs no loop)
    want = (line.strip() for line in iter_split(expected.strip(), "\n"))
    return equal_iter(iter_split(got, "\n"), want, same_line)


def _decimal_eq(a: str, b: str) -> bool:
    return Decimal(a) == Decimal(b)


@_safe
def lcb_call(value: Any, expected: Any) -> bool:
    if isinstance(value, tuple):
        value = list(value)
    return value == expected


# ---- exact ------------------------------------------------------------------------------------


@_safe
def exact_stdin(output: str, expected: str) -> bool:
    return output.replace("\r\n", "\n").rstrip() == expected.replace("\r\n", "\n").rstrip()


@_safe
def exact_call(value: Any, expected: Any) -> bool:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, DecodedDict) and type(expected) is dict:
        # keys: JSON's are str, and a str key equals only a str; looked up in the trusted dict
        return (len(value) == len(expected) and all(type(k) is str for k, _ in value.pairs)
                and value == expected
                and all(exact_call(v, expected[k]) for k, v in value.pairs))  # fmt: skip
    if isinstance(value, DecodedSet) or type(value) is not type(expected):
        return False
    if isinstance(value, list):
        return len(value) == len(expected) and all(
            exact_call(a, b) for a, b in zip(value, expected, strict=True)
        )
    if isinstance(value, dict):
        return value.keys() == expected.keys() and all(
            exact_call(value[k], expected[k]) for k in value
        )
    return value == expected


for _checker in (
    Checker("apps", "hendrycks/apps eval/testing_util.py", apps_stdin, apps_call,
            stdin_prelude="apps", call_prelude="apps", int_keys=True, sysexit_ok=True),
    Checker("codecontests", "deepmind/code_contests execution/tester_sandboxer.cc",
            codecontests_stdin, lcb_call),
    Checker("lcb", "LiveCodeBench lcb_runner/evaluation/testing_util.py", lcb_stdin, lcb_call,
            stdin_prelude="lcb"),
    Checker("exact", "(none: strict equality)", exact_stdin, exact_call),
):  # fmt: skip
    CHECKERS.register(_checker.name)(_checker)
