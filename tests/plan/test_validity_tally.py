"""cppo_bench.plan.validity: what each tuple kind means, and the fallbacks methods record."""

from __future__ import annotations

import pytest
from run_scripted import ScriptedBackend

from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.methods import METHODS
from cppo_bench.plan.contract import plan_tuple
from cppo_bench.store.runs import ProblemRecord
from cppo_bench.plan.validity import record_tally, run_tally, tuple_flags

SAMPLING = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=256)


@pytest.fixture(scope="module")
def problems():
    return load_benchmark("demo", limit=2).problems


@pytest.mark.parametrize(
    ("text", "finish", "expected"),
    [
        ("A: sort.\nB: hash.\nC: greedy.\nD: dp.", "stop", {"valid"}),
        ("A: sort.\nB: hash.", "stop", {"filled"}),
        ("no methods at all", "stop", {"filled", "generic"}),
        ("1. sort.\n2. hash.\n3. greedy.\n4. dp.", "stop", {"repaired"}),
        ("A: sort.\nB: hash.\nC: greedy.\nD: dp.\nE: bfs.", "stop", {"repaired"}),
        ("A: sort.\nB: hash.\nC: greedy.\nD: dp", "length", {"valid", "truncated"}),
    ],
)
def test_tuple_kinds(text, finish, expected):
    _, report = plan_tuple(text, 4)
    flags = tuple_flags(report.to_dict(), finish)
    assert {k for k, on in flags.items() if on} == expected


def test_a_run_below_half_valid_is_degraded():
    good = {"k": 4, "count": 4, "valid": True, "parse_mode": "labels", "filled": []}
    bad = {"k": 4, "count": 0, "valid": False, "parse_mode": "none", "filled": [0, 1, 2, 3]}
    recs = [
        ProblemRecord("p1", [], plan_validity=[good]),
        ProblemRecord("p2", [], plan_validity=[bad]),
    ]
    assert not run_tally(recs).degraded()  # 1/2 valid: at the threshold, not below
    recs.append(ProblemRecord("p3", [], plan_validity=[bad]))
    tally = run_tally(recs)
    assert tally.degraded() and tally.text().startswith("DEGRADED")
    assert "1/3 tuples valid (2 filled (2 with the generic plan)" in tally.text()


def test_plan_less_records_say_nothing():
    assert run_tally([ProblemRecord("p", [])]).text() == ""


def test_plansearch_counts_stages_that_fell_back(problems):
    backend = ScriptedBackend(problems)

    def reply(req):  # no observation ever parses; the other stages as scripted
        if "Observation" in backend.user(req) or "observations" in backend.user(req).lower():
            if "write a natural-language solution" not in backend.user(req):
                return "nothing useful"
        return backend.default_reply(req)

    backend.respond = reply
    method = METHODS.get("plansearch").from_options({"observation_layers": 1})
    outputs = method.run(problems, backend, k=4, seed=0, sampling=SAMPLING)
    for out in outputs:
        assert out.extra["fallbacks"]["plansearch_no_observations"] >= 1
    recs = [
        ProblemRecord(o.problem_id, [], plan_validity=o.plan_validity, extra=o.extra)
        for o in outputs
    ]
    text = run_tally(recs).text()
    assert f"plansearch_no_observations on {len(problems)}/{len(problems)} problems" in text
    assert "DEGRADED" in text  # a fallback on every problem


def test_skills_above_n_skills_repeat_and_say_so(problems):
    method = METHODS.get("skills").from_options({"n_skills": 2})
    outputs = method.run(problems, ScriptedBackend(problems), k=4, seed=0, sampling=SAMPLING)
    assert all(o.extra["fallbacks"] == {"skills_repeated": 2} for o in outputs)
    same = METHODS.get("skills").from_options({"n_skills": 4})
    outputs = same.run(problems, ScriptedBackend(problems), k=4, seed=0, sampling=SAMPLING)
    assert all("fallbacks" not in o.extra for o in outputs)


def test_iid_truncation_counts_the_tuple_once():
    rec = ProblemRecord(
        "p",
        [],
        plan_validity=[{"k": 4, "count": 4, "valid": True, "parse_mode": "iid", "filled": []}],
        extra={"planner_finish": ["stop", "length", "stop", "stop"]},
    )
    tally = record_tally(rec)
    assert tally.tuples == 1 and tally.counts["truncated"] == 1
