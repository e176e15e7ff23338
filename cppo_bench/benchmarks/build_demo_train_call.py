"""The call-based part of `demo_train`: original one-function problems (disjoint from `demo`).

The stdin problems of build_demo_train.py are never solved by the embedded 135M model (it
prompts for input, e.g. ``input("Enter n: ")``, which lands on stdout), so a CPU demo of an RL
trainer would see no reward at all; the model does solve easy call-based problems now and then,
which gives the demo's planner, gate and solver something real to learn from. Each entry is
(id, title, signature, task sentence, reference, argument lists); expected outputs come from
the reference, so they cannot disagree with it. Built by `python -m
cppo_bench.benchmarks.build_demo_train` together with the stdin problems.
"""

from __future__ import annotations

import json
from typing import Any

CALL: list[tuple[str, str, str, str, str, list[list[Any]]]] = [
    (
        "add-one",
        "Add One",
        "def add_one(x: int) -> int",
        "Given an integer x, return the integer that comes right after it.",
        "def add_one(x: int) -> int:\n    return x + 1\n",
        [[4], [0], [-1], [99], [-50], [123456]],
    ),
    (
        "negate-it",
        "Negate It",
        "def negate(x: int) -> int",
        "Given an integer x, return it with its sign flipped.",
        "def negate(x: int) -> int:\n    return -x\n",
        [[5], [0], [-8], [42], [-1], [1000]],
    ),
    (
        "cube-it",
        "Cube It",
        "def cube(x: int) -> int",
        "Given an integer x, return x raised to the third power.",
        "def cube(x: int) -> int:\n    return x ** 3\n",
        [[2], [0], [-3], [10], [1], [-1]],
    ),
    (
        "larger-of-two",
        "Larger of Two",
        "def larger(a: int, b: int) -> int",
        "Given two integers a and b, return whichever one is bigger.",
        "def larger(a: int, b: int) -> int:\n    return max(a, b)\n",
        [[3, 8], [8, 3], [-2, -5], [0, 0], [7, 7], [-1, 1]],
    ),
    (
        "first-item",
        "First Item",
        "def first(items: list[int]) -> int",
        "Given a non-empty list of integers, return the element at its front.",
        "def first(items: list[int]) -> int:\n    return items[0]\n",
        [[[6, 1, 2]], [[0]], [[-4, 9]], [[5, 5, 5]], [[10, -10]], [[7, 3, 1, 2]]],
    ),
    (
        "word-length",
        "Word Length",
        "def word_length(word: str) -> int",
        "Given a word, return how many characters it has.",
        "def word_length(word: str) -> int:\n    return len(word)\n",
        [["cat"], [""], ["a"], ["banana"], ["xyz"], ["seventeen"]],
    ),
]


def demo_record(
    pid: str, title: str, statement: str, tests: list, ref: str, starter_code: str = ""
) -> dict[str, Any]:
    """One demo_train row in the Problem schema (stdin and call-based rows alike)."""
    return {
        "benchmark": "demo_train",
        "problem_id": pid,
        "statement": statement,
        "tests": tests,
        "starter_code": starter_code,
        "time_limit_s": 2.0,
        "memory_limit_mb": 256,
        "reference_solutions": [ref],
        "source": {
            "apps_id": None,
            "cf_contest_id": None,
            "cf_index": None,
            "lcb_question_id": None,
            "platform": "demo_train",
            "contest_date": None,
            "url": None,
        },
        "difficulty": "easy",
        "checker": "lcb",
        "task": "codegen",
        "label": None,
        "metadata": {"title": title},
    }


def call_record(
    pid: str, title: str, sig: str, task: str, ref: str, args: list[list[Any]]
) -> dict[str, Any]:
    fn_name = sig.split("(")[0].removeprefix("def ")
    scope: dict[str, Any] = {}
    exec(ref, scope)  # our own reference, written above
    tests = [
        {
            "input": json.dumps(a),
            "output": json.dumps(scope[fn_name](*a)),
            "mode": "call",
            "fn_name": fn_name,
            "kind": "public" if i == 0 else "hidden",
        }
        for i, a in enumerate(args)
    ]
    shown = ", ".join(json.dumps(x) for x in args[0])
    statement = (
        f"Implement {fn_name}. {task}\n\nSignature: {sig}\n\n"
        f"Example: {fn_name}({shown}) gives {tests[0]['output']}.\n"
    )
    return demo_record(pid, title, statement, tests, ref, starter_code=f"{sig}:\n    ")
