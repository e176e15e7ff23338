"""Reference-solution audit on the real APPS rows in ../shared/data/apps: every reference that
the official APPS evaluator (hendrycks/apps eval/testing_util.py) accepts is accepted here.

OFFICIAL_REJECTS lists the references the official evaluator rejects, found by running its
logic on these rows (outside this project). Everything else must be AC here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch

pytestmark = pytest.mark.needs_shared

# problem id -> indices of its references that the official evaluator rejects, and why.
OFFICIAL_REJECTS: dict[int, set[int]] = {
    # several correct answers; these references print another one than the expected output,
    # and no stage of the official checker (not even its token sets) matches it
    33: {3, 6, 15},
    41: {8, 15},
    2378: {0, 1, 5, 6, 9, 10, 11, 12, 13, 14, 15},
    2391: {1, 2, 5, 8, 9, 11, 12, 14, 16, 17, 18, 19},
    2398: {4, 5, 6},
    2390: {20},  # collections.MutableMapping: removed in Python 3.10, fails everywhere
    # rejected only by artefacts of the official harness, correct as real programs:
    8: {4},  # stdin.readline()[:-1]: the official mock strips the newline already
    49: {0},  # ~2 s of precomputation: over the official 4 s alarm on a busy machine
}
ACCEPTED_HERE_TOO = {(8, 4), (49, 0)}


def apps_problems(root: Path) -> list[Problem]:
    """The HF `codeparrot/apps` schema, mapped the way the official harness reads it."""
    problems = []
    for path in sorted((root / "apps").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            io = json.loads(row["input_output"])
            fn = io.get("fn_name")
            if fn:
                tests = tuple(Case(json.dumps(i), json.dumps(o), mode="call", fn_name=fn)
                              for i, o in zip(io["inputs"], io["outputs"], strict=True))  # fmt: skip
            else:
                join = lambda v: "\n".join(v) if isinstance(v, list) else v  # noqa: E731
                tests = tuple(Case(join(i), join(o))
                              for i, o in zip(io["inputs"], io["outputs"], strict=True))  # fmt: skip
            problems.append(Problem("apps", str(row["problem_id"]), row["question"], tests=tests,
                                    reference_solutions=tuple(json.loads(row["solutions"])),
                                    checker="apps"))  # fmt: skip
    return problems


def test_every_reference_the_official_evaluator_accepts_is_accepted(shared_data: Path) -> None:
    problems = apps_problems(shared_data)
    assert len(problems) == 100
    keys, jobs = [], []
    for p in problems:
        for k, code in enumerate(p.reference_solutions):
            keys.append((int(p.problem_id), k))
            jobs.append(VerifyJob(p, code))
    results = dict(zip(keys, verify_batch(jobs, workers=2), strict=True))

    official_ok = [key for key in keys if key[1] not in OFFICIAL_REJECTS.get(key[0], set())]
    wrongly_rejected = {key: results[key].detail for key in official_ok if not results[key].passed}
    assert wrongly_rejected == {}
    assert len(official_ok) == 1644

    # The rows the data README names: multiple answers (2386, 2400: all accepted through
    # token sets), the `nonlocal` reference that needs the official function wrapper, and
    # a reference reading its input from input.txt (the official harness mocks open()).
    for key in [(2382, 0), (2368, 14), (2379, 6)] + [(2386, k) for k in range(30)]:
        assert results[key].verdict == "AC", (key, results[key].detail)

    # Faithful in the other direction too: what the official checker rejects for a wrong
    # answer is rejected here, except the two harness artefacts above.
    for pid, indices in OFFICIAL_REJECTS.items():
        for k in indices:
            assert results[(pid, k)].passed == ((pid, k) in ACCEPTED_HERE_TOO), (pid, k)
