"""The outputs that wait to be judged under `all_tests` (held.py): past the memory budget they
go to an unnamed temporary file and come back byte for byte, with the same verdicts."""

from __future__ import annotations

import os

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier import held as held_module
from cppo_bench.verifier.held import SMALL, Spool


def test_past_the_budget_outputs_go_to_a_file_and_come_back_whole() -> None:
    spool = Spool(memory_bytes=3 * SMALL)
    pieces = [os.urandom(n) for n in (10, 2 * SMALL, 2 * SMALL, 5 * SMALL, SMALL, 0)]
    handles = [spool.put(p) for p in pieces]
    # the first large piece fits the budget; the next two do not; small ones always stay
    assert [isinstance(h, bytes) for h in handles] == [True, True, False, False, True, True]
    assert [spool.get(h) for h in handles] == pieces
    spool.close()
    with pytest.raises(OSError):  # a closed spool says so, never returns something else
        spool.get(handles[2])


def test_spooled_outputs_get_the_same_verdicts(monkeypatch) -> None:
    big = "print('x' * 200_000)\nprint(input())\n"
    cases = tuple(Case(f"{k}\n", "x" * 200_000 + f"\n{k if k != 2 else 9}\n") for k in range(4))
    problem = Problem("held", "big", "", tests=cases, checker="lcb")
    jobs = [VerifyJob(problem, big), VerifyJob(problem, big + "#")]
    in_memory = verify_batch(jobs, workers=1, all_tests=True)
    monkeypatch.setattr(held_module, "MEMORY_BYTES", 0)  # every output past SMALL to the file
    spooled = verify_batch(jobs, workers=1, all_tests=True)
    want = [("WA", 3, 2)] * 2
    assert [(r.verdict, r.tests_passed, r.first_failed) for r in in_memory] == want
    assert [(r.verdict, r.tests_passed, r.first_failed) for r in spooled] == want
