"""cppo-bench augment / audit / --tests: stronger tests catch a wrong program that the
original tests let through, never a correct one; generation is deterministic and resumable;
the oracle needs two agreeing references; a run judged with a test set is another run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cppo_bench.augment.formats import infer_format
from cppo_bench.augment.generate import Settings, augment_problem
from cppo_bench.augment.mutate_stdin import stdin_candidates
from cppo_bench.augment.store import read_test_set, with_tests
from cppo_bench.benchmarks.codecontests import parse_hub_record
from cppo_bench.problem import Problem, Test
from cppo_bench.verifier import VerifyJob, verify_batch

MAX_REFS = (
    "n = int(input())\na = list(map(int, input().split()))\nprint(max(a))\n",
    "input()\nprint(sorted(map(int, input().split()))[-1])\n",
)
MAX_WRONG = "input()\na = input().split()\nprint(a[1])\n"  # right only when the max is 2nd
MAX_RIGHT = "input()\nbest = None\nfor x in map(int, input().split()):\n" \
    "    best = x if best is None or x > best else best\nprint(best)\n"  # fmt: skip
TOTAL_REFS = ("def total(xs):\n    return sum(xs)\n",
              "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n")
TOTAL_WRONG = "def total(xs):\n    return 2 * len(xs)\n"  # 6 for [1, 2, 3], as expected
TOTAL_RIGHT = "def total(xs):\n    return sum(x for x in xs)\n"


def max_problem(refs=MAX_REFS) -> Problem:
    return Problem("demo", "list-max", "Print the largest of n integers.",
                   (Test("3\n1 5 2\n", "5\n"),), reference_solutions=refs, checker="lcb")


def total_problem() -> Problem:
    return Problem("demo", "list-total", "Return the sum of a list.",
                   (Test("[[1, 2, 3]]", "6", "call", "total"),),
                   reference_solutions=TOTAL_REFS, checker="lcb")  # fmt: skip


def cc_problem() -> Problem:
    """A CodeContests record in the hub schema, with Python 3 solutions of our own."""
    record = {
        "name": "1A. Largest", "description": "Print the largest of n integers.",
        "public_tests": {"input": ["3\n1 5 2\n"], "output": ["5\n"]},
        "private_tests": {"input": [], "output": []},
        "solutions": {"language": [3, 3, 2], "solution": [*MAX_REFS, "int main(){}"]},
        "cf_contest_id": 1, "cf_index": "A", "time_limit": {"seconds": 2, "nanos": 0},
    }  # fmt: skip
    return parse_hub_record(record, include_generated=False)


def judge(problem: Problem, code: str, ts=None, only=False) -> bool:
    if ts is not None:
        problem = with_tests([problem], ts, only_augmented=only)[0]
    return verify_batch([VerifyJob(problem, code)], workers=1)[0].passed


def test_format_inference_finds_counts_and_list_ranges():
    fmt = infer_format(["3\n1 5 2\n", "4\n7 0 3 9\n"])
    assert fmt.counts == {(0, 0): [1]}
    assert (fmt.slot(1, 0, 3).lo, fmt.slot(1, 0, 4).hi) == (1, 9)


def test_same_seed_same_candidates_other_seed_others():
    inputs = ["5\n3 1 4 1 5\n", "3\n9 2 6\n"]
    a = stdin_candidates(inputs, 8, random.Random(7))
    assert a == stdin_candidates(inputs, 8, random.Random(7))
    assert a != stdin_candidates(inputs, 8, random.Random(8))
    assert all(c.input not in inputs and "mutation" in c.how for c in a)


@pytest.mark.parametrize("make", [max_problem, total_problem, cc_problem])
def test_wrong_program_passes_original_fails_augmented_correct_passes_both(make, tmp_path):
    problem = make()
    wrong, right = (TOTAL_WRONG, TOTAL_RIGHT) if problem.fn_name else (MAX_WRONG, MAX_RIGHT)
    rec = augment_problem(problem, Settings(per_problem=6, seed=0, workers=1))
    assert rec["status"] == "augmented", rec
    assert all(t["how"]["seed"] == rec["seed"] and "parent" in t["how"] for t in rec["tests"])
    (tmp_path / "augment.json").write_text(json.dumps({"bench": problem.benchmark}))
    (tmp_path / "tests.jsonl").write_text(json.dumps(rec) + "\n")
    ts = read_test_set(tmp_path)
    assert judge(problem, wrong) and judge(problem, right)  # the original tests: both pass
    assert not judge(problem, wrong, ts) and judge(problem, right, ts)
    assert judge(problem, right, ts, only=True)
    for ref in problem.reference_solutions:
        assert judge(problem, ref, ts)


def test_one_reference_is_no_oracle():
    rec = augment_problem(max_problem(MAX_REFS[:1]), Settings(per_problem=3))
    assert rec["status"] == "skipped" and "fewer than 2" in rec["reason"] and not rec["tests"]


def test_a_reference_failing_the_original_tests_is_no_oracle():
    refs = (*MAX_REFS, "input()\nprint(4)\n")
    rec = augment_problem(max_problem(refs), Settings(per_problem=4))
    assert rec["status"] == "augmented" and rec["references"] == [0, 1]
    assert "wrong answer" in rec["dropped_references"]["2"]


def test_references_that_disagree_make_no_test():
    # passes the original test, then disagrees with the others wherever the max is not 5:
    # no such input may become a test (unanimity), so every kept test has the answer 5
    refs = (*MAX_REFS, "input()\nprint(5)\n")
    rec = augment_problem(max_problem(refs), Settings(per_problem=4))
    assert rec["rejected"].get("references disagree", 0) > 0
    assert all(t["output"].strip() == "5" for t in rec["tests"])
