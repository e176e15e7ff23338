"""Plumbing of the planning methods (cppo, plansearch) against a scripted backend."""

from __future__ import annotations

import re

import pytest
from run_scripted import ScriptedBackend

from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.methods import METHODS
from cppo_bench.methods.cppo import select_indices, tuple_quota
from cppo_bench.plan.contract import GENERIC_PLAN

SAMPLING = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=1024)


@pytest.fixture(scope="module")
def problems():
    return load_benchmark("demo", limit=2).problems


def run(name, problems, k=4, seed=0, backend=None, **options):
    backend = backend or ScriptedBackend(problems)
    method = METHODS.get(name).from_options(options)
    return method.run(problems, backend, k=k, seed=seed, sampling=SAMPLING), backend


def strategy_of(req) -> str:
    m = re.search(r"\nMethod: (.*)\n", req.messages[-1]["content"])
    assert m is not None, req.messages[-1]["content"]
    return m.group(1)


def test_cppo_one_planner_call_then_one_solver_call(problems):
    outputs, backend = run("cppo", problems, k=4)
    planner, solver = backend.calls
    assert len(planner) == 2 and len(solver) == 8  # one tuple per problem, K solves each
    assert all(r.tag == "planner" for r in planner) and all(r.tag == "solver" for r in solver)
    assert planner[0].params.stop == ("\nE:",)
    assert planner[0].params.max_tokens == 512  # planner cap below the run's max_tokens
    assert solver[0].params.stop == ("\n```\n",) and solver[0].params.max_tokens == 1024
    for j, out in enumerate(outputs):
        variant = planner[j].params.seed % 97
        expected = [f"idea {i} variant {variant}." for i in range(1, 5)]
        assert out.plans == [expected]
        assert [a.plan for a in out.attempts] == expected
        assert [strategy_of(r) for r in solver[4 * j : 4 * j + 4]] == expected
        assert out.planner_tokens == len(backend.respond(planner[j]).split())
        assert out.plan_validity[0]["valid"] and out.plan_validity[0]["count"] == 4
        assert [a.tuple_index for a in out.attempts] == [0] * 4


@pytest.mark.parametrize(("select", "expected"), [("first", [1, 2]), ("last", [3, 4])])
def test_cppo_k2_takes_two_of_the_four_tuple(problems, select, expected):
    outputs, backend = run("cppo", problems[:1], k=2, select=select)
    assert backend.calls[0][0].params.stop == ("\nE:",)  # still asks for a full tuple
    plans = [a.plan for a in outputs[0].attempts]
    assert [int(p.split()[1]) for p in plans] == expected
    assert len(outputs[0].plans[0]) == 4 and len(backend.calls[1]) == 2


def test_cppo_random_select_is_seeded_and_keeps_order(problems):
    a, _ = run("cppo", problems[:1], k=3, select="random", seed=5)
    b, _ = run("cppo", problems[:1], k=3, select="random", seed=5)
    assert a[0].extra["selected"] == b[0].extra["selected"]
    idx = a[0].extra["selected"][0]
    assert len(idx) == 3 and idx == sorted(idx) and set(idx) <= {0, 1, 2, 3}
    import random

    assert select_indices("random", 4, 2, random.Random(1)) == sorted(
        random.Random(1).sample(range(4), 2)
    )


def test_cppo_pools_independent_tuples_for_k_above_four(problems):
    outputs, backend = run("cppo", problems[:1], k=6)
    planner = backend.calls[0]
    assert len(planner) == 2 and planner[0].params.seed != planner[1].params.seed
    out = outputs[0]
    assert [a.tuple_index for a in out.attempts] == [0, 0, 0, 0, 1, 1]
    assert len(out.plans) == 2 and len(out.plan_validity) == 2
    assert out.extra["selected"] == [[0, 1, 2, 3], [0, 1]]
    assert tuple_quota(8, 4) == [4, 4] and tuple_quota(16, 4) == [4] * 4
    assert tuple_quota(3, 4) == [3] and tuple_quota(9, 4) == [4, 4, 1]


def test_cppo_iid_draws_each_strategy_alone(problems):
    outputs, backend = run("cppo", problems[:1], k=4, inference="iid")
    planner = backend.calls[0]
    assert len(planner) == 4 and len({r.params.seed for r in planner}) == 4
    assert all(r.params.stop == ("\nB:",) for r in planner)
    # the prompt is the joint one: only the shared history is gone
    assert "labelled A: to D:" in planner[0].messages[-1]["content"]
    expected = [f"idea 1 variant {r.params.seed % 97}." for r in planner]
    assert [a.plan for a in outputs[0].attempts] == expected
    assert outputs[0].planner_tokens == sum(len(backend.respond(r).split()) for r in planner)


def test_cppo_fills_a_short_tuple_and_records_it(problems):
    def reply(req):
        if req.tag == "planner":
            return "Method 1: Greedy by value.\nMethod 2: Sort then scan."
        return "```python\nprint(1)\n```"

    outputs, _ = run("cppo", problems[:1], backend=ScriptedBackend(respond=reply))
    out = outputs[0]
    assert [a.plan for a in out.attempts] == ["Greedy by value.", "Sort then scan."] * 2
    report = out.plan_validity[0]
    assert report["count"] == 2 and report["filled"] == [2, 3] and not report["valid"]
    outputs, _ = run("cppo", problems[:1], backend=ScriptedBackend(respond=reply), fill="generic")
    assert [a.plan for a in outputs[0].attempts][2:] == [GENERIC_PLAN] * 2


def test_cppo_unparsable_plan_falls_back_to_the_generic_strategy(problems):
    outputs, _ = run("cppo", problems[:1], backend=ScriptedBackend(respond=lambda r: "hmm"))
    assert [a.plan for a in outputs[0].attempts] == [GENERIC_PLAN] * 4
    assert outputs[0].plan_validity[0]["parse_mode"] == "none"
