"""PlanSearch follows the released implementation's stages and counts (issue #15 item 4),
under the study's budget: 8 candidate plans and K solver attempts."""

from __future__ import annotations

import random
import re

import pytest
from run_scripted import OBSERVATIONS, ScriptedBackend

from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.methods import METHODS, OptionError
from cppo_bench.methods.plansearch_stages import (
    NO_OBSERVATIONS,
    ObservationNode,
    expand,
    n_combos,
    observation_combos,
    parse_observations,
    pick_combos,
    select_shuffle,
    select_spread,
    tree_combos,
)

SAMPLING = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=1024)
STAGES = ["obs", "filter", "derived", "filter", "sketch", "critique", "fix", "pseudo", "solve"]


@pytest.fixture(scope="module")
def problems():
    return load_benchmark("demo", limit=2).problems


def run(problems, k=4, backend=None, **options):
    backend = backend or ScriptedBackend(problems)
    method = METHODS.get("plansearch").from_options(options)
    return method.run(problems, backend, k=k, seed=0, sampling=SAMPLING), backend


def user(req) -> str:
    return req.messages[-1]["content"]


def test_each_stage_sends_the_released_number_of_requests(problems):
    outputs, backend = run(problems, k=4)
    # per problem: 1 observation request (+ filter turn); the filter keeps 2 observations,
    # so 1 + 2 + 1 = 4 subsets of size <= 2, one derived request (+ filter) each; 8
    # candidates = 4 sketches + their 4 fixes (after 4 critiques); K pseudocode; K solves
    assert [len(c) for c in backend.calls] == [2, 2, 8, 8, 8, 8, 8, 8, 8]
    obs, filt, derived, _, sketch, crit, fix, pseudo, solve = backend.calls
    assert "Find 10 non-obvious observations" in user(obs[0])  # released default count
    assert filt[0].messages[-2]["role"] == "assistant"  # a follow-up turn
    subsets = [user(r).split("Observations known to be correct:\n")[1] for r in derived[:4]]
    assert subsets[0].startswith(NO_OBSERVATIONS)  # the empty subset is one of them
    assert subsets[1].startswith("- values are small.\n\n")
    assert subsets[3].startswith("- values are small.\n- order does not matter.\n\n")
    assert all(OBSERVATIONS[2] not in s for s in subsets)  # the filter dropped it
    assert all(r.tag == "planner" for c in backend.calls[:-1] for r in c)
    assert fix[0].messages[-2]["content"] == backend.respond(crit[0])  # same conversation
    assert all(r.tag == "solver" for r in solve)
    for j, out in enumerate(outputs):
        cands = out.extra["candidates"]
        assert len(cands) == 8 and len(out.attempts) == 4
        assert [c.split()[0] for c in cands] == ["Sketch", "Fixed"] * 4
        assert len(set(out.extra["selected"])) == 4  # K <= 8: distinct candidates
        assert [a.plan for a in out.attempts] == [cands[i] for i in out.extra["selected"]]
        assert out.extra["observations"] == list(OBSERVATIONS[:2])
        assert all(user(r).count("PSEUDO") == 1 for r in solve[4 * j : 4 * j + 4])
        # every stage lists problem 0's requests, then problem 1's (equal counts here)
        mine = [r for c in backend.calls[:-1] for r in c[j * len(c) // 2 : (j + 1) * len(c) // 2]]
        assert out.planner_tokens == sum(len(backend.respond(r).split()) for r in mine)
        spent = sum(len(backend.respond(r).split()) for r in solve[4 * j : 4 * j + 4])
        assert out.solver_tokens == spent


def test_one_derived_request_per_observation_subset(problems):
    ten = "\n".join(f"Observation {i}:\nClaim: fact {i}." for i in range(1, 11))

    def reply(req):
        if "non-obvious observations about properties" in user(req):
            return ten
        return ScriptedBackend(problems).default_reply(req)

    _, backend = run(problems[:1], backend=ScriptedBackend(problems, respond=reply),
                     filter_observations=False)  # fmt: skip
    sizes = [len(c) for c in backend.calls]
    assert sizes[:2] == [1, n_combos(10, 2)] == [1, 56]  # 1 + 10 + 45 subsets


def test_a_chatty_model_cannot_grow_the_tree_past_the_options(problems):
    # a reply with 300 observations where 10 were asked: the first 10 are kept, so the next
    # layer asks for n_combos(10, 2) = 56 derived requests, not n_combos(300, 2) = 45,151
    many = "\n".join(f"Observation {i}:\nClaim: fact {i}." for i in range(1, 301))

    def reply(req):
        if "non-obvious observations" in user(req) or "Observations known" in user(req):
            return many
        return ScriptedBackend(problems).default_reply(req)

    out, backend = run(problems[:1], backend=ScriptedBackend(problems, respond=reply),
                       filter_observations=False, observation_layers=3)  # fmt: skip
    sizes = [len(c) for c in backend.calls]
    assert sizes[:3] == [1, 56, 56 * 56]
    assert out[0].extra["observations"] == [f"fact {i}." for i in range(1, 11)]


@pytest.mark.parametrize(
    "options",
    [
        {"n_observations": 40, "max_subset": 20},
        {"observation_layers": 4},
        {"max_subset": 10, "observation_layers": 3},
    ],
)
def test_options_whose_tree_is_too_large_are_one_line(options):
    with pytest.raises(OptionError, match=r"observation requests a problem, past 10,000"):
        METHODS.get("plansearch").from_options(options)


def test_options_switch_stages_off(problems):
    outputs, backend = run(problems[:1], fix_sketches=False, pseudocode=False, n_candidates=5)
    sizes = [len(c) for c in backend.calls]
    assert sizes == [1, 1, 4, 4, 5, 4]  # 5 sketches, no critique/fix/pseudocode
    solve = backend.calls[-1]
    assert all("Method: Sketch" in user(r) for r in solve)  # the solver reads the sketch
    out, _ = run(problems[:1], k=2, observation_layers=1, filter_observations=False)
    assert [len(c) for c in _.calls] == [1, 4, 4, 4, 2, 2]
    with pytest.raises(OptionError, match="prompt_version v2"):
        METHODS.get("plansearch").from_options({"prompt_version": "v1"})
    with pytest.raises(OptionError, match="n_candidates must be >= 1"):
        METHODS.get("plansearch").from_options({"n_candidates": "0"})


def test_k_above_the_candidates_cycles(problems):
    outputs, _ = run(problems[:1], k=10)
    sel = outputs[0].extra["selected"]
    assert len(sel) == 10 and sorted(set(sel)) == list(range(8)) and sel[8:] == sel[:2]


def test_stage_helpers():
    text = "Observation 1:\nReasoning: long.\nClaim: a.\nObservation 2: b.\nObservation 3:"
    assert parse_observations(text) == ["a.", "b."]
    # a claim whose text starts on the next line, and a decorated one, are claims too
    text = "Observation 1:\nClaim:\n  c.\nWhy: r.\nObservation 2:\n**Claim**: d.\nmore"
    assert parse_observations(text) == ["c.", "d."]
    assert observation_combos(["a", "b", "c"], 2) == [
        (), ("a",), ("b",), ("c",), ("a", "b"), ("a", "c"), ("b", "c"),
    ]  # fmt: skip
    assert n_combos(10, 2) == 56 and n_combos(1, 2) == 2 and n_combos(3, 0) == 1
    root = ObservationNode((), 0)
    expand(root, ["a", "b"], 2)
    for i, child in enumerate(root.children):
        expand(child, [f"d{i}"], 2)
    assert tree_combos(root) == [(), ("a",), ("b",), ("a", "b"), ("d0",), ("d1",), ("d2",), ("d3",)]
    rng = random.Random(0)
    assert sorted(pick_combos([(), ("a",)], 4, rng)) == [(), (), ("a",), ("a",)]
    assert sorted(select_shuffle(3, 3, random.Random(1))) == [0, 1, 2]
    cands = ["Sort and scan.", "Sort and scan!", "Use dynamic programming.", "Build a graph."]
    assert select_spread(cands, 3) == [0, 2, 3] and select_spread([None, ""], 2) == []
    assert re.match(r"\(none", NO_OBSERVATIONS)
