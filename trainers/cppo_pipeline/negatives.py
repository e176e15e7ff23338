"""Reward-model data: judge positives, well-formed but semantically invalid negatives made from
real tuples, 1:1 balancing by prompt and label, and a train/val split by problem.

Every negative keeps the tuple's shape (K labelled one-sentence methods), so the reward model
cannot win on format alone; it has to read what the methods say. Each corruption changes one
method of a valid tuple:
  reworded_duplicate  another method of the same tuple, reworded (same idea twice);
  code_leak           a method carrying a line of code;
  answer_leak         a method stating the expected output of a test;
  foreign_method      a method taken from a different problem's tuple;
  generic_advice      advice that fits every problem.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainers.harness import Problem, Registry, format_plans


@dataclass(frozen=True)
class LabelledTuple:
    problem: Problem
    plans: tuple[str, ...]
    label: int  # 1 valid, 0 invalid
    source: str  # "judge:<name>" for sampled tuples, "negative:<kind>" for made ones

    @property
    def prompt_id(self) -> str:
        return self.problem.problem_id

    @property
    def text(self) -> str:
        return format_plans(self.plans)


Corruption = Callable[[LabelledTuple, Sequence[LabelledTuple], random.Random], str | None]
CORRUPTIONS: Registry[Corruption] = Registry("negative kind")
_SWAPS = (("use", "apply"), ("array", "list"), ("compute", "calculate"), ("each", "every"))


@CORRUPTIONS.register("reworded_duplicate")
def _reworded(t: LabelledTuple, pool: Sequence[LabelledTuple], rng: random.Random) -> str | None:
    if len(t.plans) < 2:
        return None
    text = t.plans[rng.randrange(len(t.plans) - 1)]
    for a, b in _SWAPS:
        text = text.replace(f" {a} ", f" {b} ")
    return "Equivalently, " + text[0].lower() + text[1:]


@CORRUPTIONS.register("code_leak")
def _code(t: LabelledTuple, pool: Sequence[LabelledTuple], rng: random.Random) -> str | None:
    return t.plans[0].rstrip(".") + ", e.g. for i in range(n): best = max(best, a[i])."


@CORRUPTIONS.register("answer_leak")
def _answer(t: LabelledTuple, pool: Sequence[LabelledTuple], rng: random.Random) -> str | None:
    outs = [x.output.strip() for x in t.problem.tests if 0 < len(x.output.strip()) <= 30]
    if not outs:
        return None
    return f"{t.plans[0].rstrip('.')}; the answer is {rng.choice(outs)}."


@CORRUPTIONS.register("foreign_method")
def _foreign(t: LabelledTuple, pool: Sequence[LabelledTuple], rng: random.Random) -> str | None:
    others = [o for o in pool if o.prompt_id != t.prompt_id]
    return rng.choice(rng.choice(others).plans) if others else None


@CORRUPTIONS.register("generic_advice")
def _generic(t: LabelledTuple, pool: Sequence[LabelledTuple], rng: random.Random) -> str | None:
    return rng.choice(
        (
            "Think step by step and use any correct algorithm that fits the constraints.",
            "Read the problem carefully and solve it efficiently with a standard approach.",
            "Use an efficient algorithm and test the program on the samples before submitting.",
        )
    )


def make_negatives(
    positives: Sequence[LabelledTuple], per_tuple: int = 1, seed: int = 0
) -> list[LabelledTuple]:
    """``per_tuple`` negatives per positive, cycling through the corruption kinds."""
    rng = random.Random(seed)
    kinds = CORRUPTIONS.names()
    out: list[LabelledTuple] = []
    for n, pos in enumerate(positives):
        for j in range(per_tuple):
            for shift in range(len(kinds)):  # the next kind if one does not apply here
                kind = kinds[(n * per_tuple + j + shift) % len(kinds)]
                method = CORRUPTIONS.get(kind)(pos, positives, rng)
                if method is not None:
                    break
            else:
                continue
            slot = (
                (len(pos.plans) - 1)
                if kind == "reworded_duplicate"
                else rng.randrange(len(pos.plans))
            )
            plans = list(pos.plans)
            plans[slot] = method
            out.append(LabelledTuple(pos.problem, tuple(plans), 0, f"negative:{kind}"))
    return out


def balance(items: Sequence[LabelledTuple], seed: int = 0) -> list[LabelledTuple]:
    """1:1 by label within every prompt: each prompt keeps min(#valid, #invalid) of each, so
    neither label nor a prolific prompt dominates. Prompts with one label only are dropped."""
    rng = random.Random(seed)
    cells: dict[tuple[str, int], list[LabelledTuple]] = defaultdict(list)
    for it in items:
        cells[(it.prompt_id, it.label)].append(it)
    out: list[LabelledTuple] = []
    for pid in sorted({p for p, _ in cells}):
        pos, neg = cells.get((pid, 1), []), cells.get((pid, 0), [])
        n = min(len(pos), len(neg))
        out += rng.sample(pos, n) + rng.sample(neg, n)
    return out


def split_by_problem(
    items: Sequence[LabelledTuple], val_fraction: float = 0.2, seed: int = 0
) -> tuple[list[LabelledTuple], list[LabelledTuple]]:
    """Train/val with no problem on both sides (val measures transfer to unseen problems)."""
    pids = sorted({it.prompt_id for it in items})
    if len(pids) < 2:
        raise ValueError(f"need >= 2 problems to split train/val by problem, got {len(pids)}")
    random.Random(seed).shuffle(pids)
    n_val = min(len(pids) - 1, max(1, round(val_fraction * len(pids))))
    val_ids = set(pids[:n_val])
    return (
        [it for it in items if it.prompt_id not in val_ids],
        [it for it in items if it.prompt_id in val_ids],
    )
