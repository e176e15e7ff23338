"""Every regular expression of the harness and the trainers runs in linear time on any text.

They read model outputs (plans, programs, answers), statuses a program forged and
strangers' datasets, and a policy under RL shapes its outputs: one pattern that rescans the
rest of a run from each of its characters ("^\\s*x" over a run of blank lines, "[...]+$",
"a.*b" from every "a") turned a 100 KB planner completion of newlines into 276 s of
`parse_plans` and an 80 KB forged status into 14 s of the judge. So this test finds every
pattern (compiled at module level, written as a literal in an `re.*` call, or built by a
function listed below) and runs it over long runs of the characters and words that make
such patterns backtrack; and it runs the parsers whose patterns are built at run time. A
linear pattern scans 40,000 characters in about a millisecond; a quadratic one takes
seconds, far past the bound."""

from __future__ import annotations

import ast
import importlib
import itertools
import pkgutil
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from code_walk import sources

import cppo_bench
import trainers

ROOT = Path(__file__).resolve().parents[2]
SIZE = 40_000
BOUND_S = 0.5  # per pattern and text; a linear scan of SIZE characters takes ~1 ms
SINGLES = [" ", "\n", "\t", "a", "1", "`", "*", "\\", '"', "(", "[", ".", ":", "#", "-", "_",
           "~", "!", "<", "=", "{", "'"]  # fmt: skip
FOLLOWERS = [" ", "\n", "a", "\\"]
WORDS = ["step 1 ", "(1) ", "first, ", "Method 1", "claim", "Claim:", "Time Limit:", "import ",
         "def ", "print(", "A: ", "x = f(", "answer is ", "<sup>", "1. ", "```", "\\u00"]  # fmt: skip


def texts() -> list[str]:
    pieces = SINGLES + [a + b for a, b in itertools.product(SINGLES, FOLLOWERS) if a != b]
    pieces += WORDS + [w + f for w in WORDS for f in (" ", "\n")]
    return [p * (SIZE // len(p)) + "!" for p in pieces]


TEXTS = texts()


def _modules() -> Iterator[Any]:
    for package in (cppo_bench, trainers):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            # the sandbox's inside/ runs as scripts on their own path (their literal
            # patterns are found by the walk below)
            if info.name.endswith("__main__") or ".inside." in info.name:
                continue
            yield importlib.import_module(info.name)


def module_patterns() -> dict[str, re.Pattern[Any]]:
    """Patterns held by a module (a name, or in a list / tuple / dict of them)."""
    found: dict[str, re.Pattern[Any]] = {}
    for mod in _modules():
        for name, value in vars(mod).items():
            items = value.values() if isinstance(value, dict) else value
            if isinstance(value, re.Pattern):
                items = [value]
            elif not isinstance(value, (list, tuple, dict)):
                continue
            for i, item in enumerate(items):
                parts = item if isinstance(item, tuple) else (item,)
                for j, part in enumerate(parts):
                    if isinstance(part, re.Pattern) and part.__module__ != "typing":
                        found[f"{mod.__name__}.{name}[{i}][{j}]"] = part
    return found


# where each re.* call takes its flags positionally
_FLAGS_AT = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "findall": 2, "finditer": 2,
             "split": 3, "sub": 4, "subn": 4}  # fmt: skip


def _flags(node: ast.expr | None) -> int:
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return int(getattr(re, node.attr))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flags(node.left) | _flags(node.right)
    raise ValueError(ast.dump(node))


ANCHORED: set[str] = set()  # literal patterns only ever matched at the text's start


def literal_patterns() -> dict[str, re.Pattern[Any]]:
    """Patterns written as a literal in an re.* call (compiled ones are also held by their
    module; a literal of re.match / re.fullmatch is scanned as those scan it)."""
    found: dict[str, re.Pattern[Any]] = {}
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in _FLAGS_AT
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                continue
            flags = next((k.value for k in node.keywords if k.arg == "flags"), None)
            at = _FLAGS_AT[node.func.attr]
            if flags is None and len(node.args) > at:
                flags = node.args[at]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found[where] = re.compile(node.args[0].value, _flags(flags))
            if node.func.attr in ("match", "fullmatch"):
                ANCHORED.add(where)
    return found


def _built() -> dict[str, re.Pattern[Any]]:
    # patterns a function builds at run time, with the arguments the code passes
    from cppo_bench.plan import contract
    from cppo_bench.report import extra_tables

    built = {f"contract._label_re({x!r})": contract._label_re(x) for x in ("Method", "Step")}
    for pat, name in extra_tables._CONSTRUCTS:
        built[f"extra_tables._CONSTRUCTS {name}"] = re.compile(pat)
    return built


def _slowest(scan: Callable[[str], object]) -> tuple[float, str]:
    worst = (0.0, "")
    for text in TEXTS:
        start = time.perf_counter()
        scan(text)
        took = time.perf_counter() - start
        worst = max(worst, (took, text[:12]))
        if took > BOUND_S:
            break
    return worst


PATTERNS = {**module_patterns(), **literal_patterns(), **_built()}


def test_the_walk_finds_the_patterns_it_must() -> None:
    # the parsers of model output, a forged status and a dataset's statement are all seen
    names = " ".join(PATTERNS)
    for must in ("contract._NUMBERED", "contract._LETTER", "extract._FENCE", "decode._STRINGS",
                 "codecontests._LIMIT_LINE", "plansearch_stages._CLAIM", "_label_re('Method')",
                 "contract.py:"):  # fmt: skip
        assert must in names, must
    assert len(PATTERNS) > 100


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear(name: str) -> None:
    pattern = PATTERNS[name]

    def scan(text: str) -> object:
        data: Any = text.encode() if isinstance(pattern.pattern, bytes) else text
        if name in ANCHORED:
            return pattern.match(data)
        return sum(1 for _ in itertools.islice(pattern.finditer(data), 2000))

    took, text = _slowest(scan)
    assert took <= BOUND_S, f"{name} took {took:.2f} s on {text!r}... ({SIZE} characters)"


def _parsers() -> dict[str, Callable[[str], object]]:
    from cppo_bench.benchmarks.codecontests import split_limits
    from cppo_bench.methods.output_prediction import canonical_answer, extract_answer
    from cppo_bench.plan.contract import parse_judge_verdict, parse_plans, validate_plans
    from cppo_bench.problem import Problem, Test
    from cppo_bench.verifier.decode import parse_status
    from cppo_bench.verifier.extract import extract_code

    def limits(text: str) -> object:
        try:
            return split_limits(text)
        except ValueError:
            return None

    # a problem with many short outputs: each is looked for in every plan (answer leaks)
    many = Problem(benchmark="x", problem_id="1", statement="s",
                   tests=tuple(Test("", f"{i} 1") for i in range(2000)))  # fmt: skip
    return {
        "parse_plans": lambda t: parse_plans(t, 4),
        "validate_plans": lambda t: validate_plans([t] * 4, 4, problem=many),
        "parse_judge_verdict": parse_judge_verdict,
        "extract_code": extract_code,
        "extract_answer": extract_answer,
        "canonical_answer": canonical_answer,
        "split_limits": limits,
        "parse_status": lambda t: parse_status(b'{"value": "' + t.encode()),
    }


@pytest.mark.parametrize("name", sorted(_parsers()))
def test_the_parsers_of_hostile_text_are_linear(name: str) -> None:
    took, text = _slowest(_parsers()[name])
    assert took <= 4 * BOUND_S, f"{name} took {took:.2f} s on {text!r}... ({SIZE} characters)"
