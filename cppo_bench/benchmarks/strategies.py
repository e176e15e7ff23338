"""The `strategies` benchmark: a generated toy task where K = 4 distinct strategies matter.

Each prompt names a category (with a few filler words). Eight strategies exist; four of them
are plausible for the category (category c: strategies c, c+1, c+2, c+3 mod 8), and exactly
one of those four solves the instance. Every statement comes as four instances, one
solved by each plausible strategy, so given the prompt the solving strategy is uniform over the
four (exactly, not only in expectation) and cannot be memorised. A strategy's program is one word (``print("greedy")``) whose output the real
sandboxed verifier checks against the instance's hidden test. So the prompt never decides
which strategy works, and the best a policy can do is known in closed form (docs/learning.md):
pass@1 <= 1/4; pass@4 of independent samples <= 1 - (3/4)^4; pass@4 of a tuple of four
distinct plausible strategies = 1.

Generated deterministically from the split's name (never benchmark text); `train` and
`heldout` share no statement. The words here are the whole vocabulary of the tiny policy
(`benchmarks/fixtures/strategy_task.py` builds it), so every word a prompt, plan or program
needs is one token.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.problem import LoadResult, Problem, Test

NAME = "strategies"
STRATEGIES = (
    "greedy",
    "sorting",
    "hashing",
    "bisection",
    "dynamic",
    "graphsearch",
    "simulation",
    "twopointers",
)
CATEGORIES = ("arrays", "strings", "graphs", "intervals", "numbers", "grids", "trees", "queries")
PLAUSIBLE = 4  # strategies plausible for a category; exactly one of them solves an instance
FILLER = ("solve", "this", "task", "now", "please", "quickly", "problem", "about", "the", "some")
SIZES = {"train": 32, "heldout": 16}  # statements (4 instances each): 4 resp. 2 a category


def program(strategy: str) -> str:
    """The one-word program of a strategy: it prints the strategy's name."""
    return f'print("{strategy}")'


def plausible(category: str) -> tuple[str, ...]:
    """The four strategies plausible for ``category`` (a cyclic window of the eight)."""
    c = CATEGORIES.index(category)
    return tuple(STRATEGIES[(c + j) % len(STRATEGIES)] for j in range(PLAUSIBLE))


def category_of(problem: Problem) -> str:
    return str(problem.metadata["category"])


def problems(split: str, size: int | None = None) -> list[Problem]:
    """The instances of ``size`` statements of ``split`` (train | heldout), the same on
    every call. Categories take turns; each statement comes as four instances, one solved by
    each of its category's plausible strategies (in a shuffled order), so the solving
    strategy is uniform given the prompt, exactly, and no policy can memorise it."""
    if split not in SIZES:
        raise DataError(f"{NAME} benchmark: split must be one of {', '.join(SIZES)}")
    n = SIZES[split] if size is None else size
    if not 1 <= n <= 1024:
        raise DataError(f"{NAME} benchmark: size must be in 1..1024 statements, got {n}")
    rng = random.Random(f"{NAME}:{split}")
    seen: set[str] = set()
    out: list[Problem] = []
    while len(seen) < n:
        category = CATEGORIES[len(seen) % len(CATEGORIES)]
        statement = _statement(rng, category)
        # a statement belongs to one split by its hash: held-out prompts are never trained on
        if statement in seen or split_of(statement) != split:
            continue
        solvers = list(plausible(category))
        rng.shuffle(solvers)
        for j, solver in enumerate(solvers):
            out.append(
                Problem(
                    benchmark=NAME,
                    problem_id=f"{split}-{len(seen):04d}-{j}",
                    statement=statement,
                    tests=(Test(input="", output=f"{solver}\n"),),
                    reference_solutions=(program(solver),),
                    checker="lcb",
                    time_limit_s=2.0,
                    metadata={"category": category},
                )
            )
        seen.add(statement)
    return out


def split_of(statement: str) -> str:
    """The one split a statement may appear in (a third of all statements are held out)."""
    bucket = hashlib.sha256(statement.encode()).digest()[0] % 3
    return "heldout" if bucket == 0 else "train"


def _statement(rng: random.Random, category: str) -> str:
    words = rng.sample(FILLER, rng.randint(2, 4))
    words.insert(rng.randint(0, len(words)), category)
    return " ".join(words)


def load_strategies(data: str | None = None, *, strict: bool = False, **options: Any) -> LoadResult:
    """The generated instances of ``split`` (default train); ``size``: statements (x4)."""
    if data is not None:
        raise DataError(f"{NAME} benchmark: it is generated; --data is not used")
    split = str(options.pop("split", None) or "train")
    size = options.pop("size", None)
    if options:
        raise DataError(f"{NAME} benchmark: unknown option(s): {', '.join(sorted(options))}")
    try:
        count = None if size is None else int(size)
    except (TypeError, ValueError):
        raise DataError(f"{NAME} benchmark: size must be a whole number") from None
    return LoadResult(problems(split, count), source=f"{NAME}:{split}")


SPEC = BenchmarkSpec(
    name=NAME,
    description="generated toy task: 4 plausible strategies per category, one solves",
    load=load_strategies,
    default_split="train",
    evaluate_with=("--bench", NAME, "-o", "split=heldout", "--max-tokens", "1"),
)
