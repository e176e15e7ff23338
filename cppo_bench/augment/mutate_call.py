"""Candidate arguments for call-based problems: type-aware mutation of the existing ones.

EvalPlus's mutators (`evalplus.gen.type_mut.TypedMutGen.typed_mutate`, an optional extra:
`pip install --no-deps evalplus multipledispatch`) are used when they import: only the
mutation functions, never its `generate()`, which executes code in-process. Without them
a small fallback of the same kind runs (documented in docs/augment.md): integers step or
jump within [-100, 100] or to a value seen, strings get a character replaced, inserted or
deleted, lists get an element mutated, inserted, removed or duplicated, booleans flip.
Either way one argument is mutated per step, so the call keeps its arity.
"""

from __future__ import annotations

import copy
import json
import math
import random
import string
from collections.abc import Sequence
from typing import Any

from cppo_bench.augment.mutate_stdin import Candidate

MAX_ARG_CHARS = 1 << 16


class _SortedSet(set):
    """A set that iterates in a fixed order. EvalPlus draws an ingredient with
    `random.choice(list(a_set))`: a plain set of strings lists in an order that changes with
    each interpreter's hash seed, and so would the tests."""

    def __iter__(self):  # noqa: ANN204
        return iter(sorted(set.__iter__(self), key=repr))


def evalplus_mutator(seeds: list[Any]) -> Any | None:
    """EvalPlus's TypedMutGen over `seeds` (for its "ingredients": values seen), or None
    when evalplus (or its multipledispatch dependency) is not installed."""
    try:
        from evalplus.gen.type_mut import TypedMutGen
    except ImportError:
        return None
    # contract "" and entry point "": only typed_mutate is called, never generate()
    gen = TypedMutGen(seeds, "", "")
    gen.ingredients = {t: _SortedSet(v) for t, v in gen.ingredients.items()}
    return gen


def mutator_name() -> str:
    try:
        import evalplus.gen.type_mut  # noqa: F401
    except ImportError:
        return "fallback"
    return "evalplus"


def _seen_values(value: Any, into: dict[type, list]) -> None:
    if isinstance(value, list):
        for v in value:
            _seen_values(v, into)
    elif isinstance(value, dict):
        for v in value.values():
            _seen_values(v, into)
    elif type(value) in (int, float, str):
        into.setdefault(type(value), []).append(value)


def fallback_mutate(value: Any, rng: random.Random, seen: dict[type, list]) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        pool = seen.get(int) or [0]
        return rng.choice(
            [value + 1, value - 1, 0, rng.randint(-100, 100), rng.choice(pool), -value]
        )
    if isinstance(value, float):
        return rng.choice([value + 1.0, value / 2, -value, rng.uniform(-100, 100)])
    if isinstance(value, str):
        chars = list(value)
        alphabet = sorted(set(value)) or list(string.ascii_lowercase)
        op = rng.choice(["replace", "insert", "delete"])
        if op == "insert" or not chars:
            chars.insert(rng.randint(0, len(chars)), rng.choice(alphabet))
        elif op == "delete":
            del chars[rng.randrange(len(chars))]
        else:
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        return "".join(chars)
    if isinstance(value, list):
        new = list(value)
        op = rng.choice(["mutate", "insert", "remove", "duplicate"]) if new else "insert"
        if op == "insert":
            template = rng.choice(new) if new else 0
            new.insert(rng.randint(0, len(new)), fallback_mutate(template, rng, seen))
        elif op == "remove":
            del new[rng.randrange(len(new))]
        elif op == "duplicate":
            new.insert(rng.randint(0, len(new)), copy.deepcopy(rng.choice(new)))
        else:
            k = rng.randrange(len(new))
            new[k] = fallback_mutate(new[k], rng, seen)
        return new
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value, key=str))
        return dict(value, **{key: fallback_mutate(value[key], rng, seen)})
    return value


def _json(args: list) -> str | None:
    try:
        text = json.dumps(args, allow_nan=False)
    except (TypeError, ValueError):  # a set, a NaN: not a JSON test
        return None
    return text if len(text) <= MAX_ARG_CHARS else None


def _boundaries(args: list) -> list[tuple[str, list]]:
    """Each list argument emptied, then cut to its first element."""
    out = []
    for k, a in enumerate(args):
        if isinstance(a, list) and len(a) > 1:
            out.append((f"single_arg{k}", args[:k] + [a[:1]] + args[k + 1 :]))
        if isinstance(a, list) and a:
            out.append((f"empty_arg{k}", args[:k] + [[]] + args[k + 1 :]))
    return out


def call_candidates(inputs: Sequence[str], n: int, rng: random.Random) -> list[Candidate]:
    parents: list[tuple[int, list]] = []
    for k, text in enumerate(inputs):
        try:
            args = json.loads(text)
        except ValueError:
            continue
        if isinstance(args, list) and args and len(text) <= MAX_ARG_CHARS:
            parents.append((k, args))
    if not parents or n <= 0:
        return []
    seen_text = {json.dumps(a) for _, a in parents}
    out: list[Candidate] = []

    def keep(args: list, how: dict) -> None:
        text = _json(args)
        if text is not None and text not in seen_text and len(out) < n:
            seen_text.add(text)
            out.append(Candidate(text, how))

    for name, args in _boundaries(parents[0][1]):
        keep(args, {"mutation": name, "parent": parents[0][0]})
    seen: dict[type, list] = {}
    for _, args in parents:
        _seen_values(args, seen)
    gen = evalplus_mutator([a for _, a in parents])
    engine = "evalplus" if gen is not None else "fallback"
    # evalplus draws from the global `random`: seed it from ours, and put it back after
    state = random.getstate()
    random.seed(rng.getrandbits(64))
    try:
        for _ in range(20 * n):
            if len(out) >= n:
                break
            k, parent = rng.choice(parents)
            args = copy.deepcopy(parent)
            steps = rng.randint(1, 3)
            for _ in range(steps):
                j = rng.randrange(len(args))
                try:
                    args[j] = (
                        gen.typed_mutate(args[j])
                        if gen is not None
                        else fallback_mutate(args[j], rng, seen)
                    )
                except (NotImplementedError, TypeError, ValueError, IndexError, KeyError):
                    break  # a type evalplus has no mutator for
            if any(isinstance(a, float) and not math.isfinite(a) for a in args):
                continue
            keep(args, {"mutation": f"{engine}:{steps}", "parent": k})
    finally:
        random.setstate(state)
    return out
