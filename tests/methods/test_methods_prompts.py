"""The versioned prompt templates: every shipped prompt renders, and the contracts hold."""

from __future__ import annotations

import pytest

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.errors import DataError
from cppo_bench.plan.contract import format_plans, parse_plans
from cppo_bench.prompts import available, load_prompt, render, versions

VALUES = {
    "direct": {},
    "solve": {"plan": "Sort, then sweep."},
    "plan": {"n": 4, "n_next": 5},
    "plan_and_solve": {},
    "plansearch_observations": {"n": 10},
    "plansearch_derived": {"observations": "- x."},
    "plansearch_filter": {},
    "plansearch_sketch": {"observations": "- x."},
    "plansearch_critique": {"sketch": "Sort, then sweep."},
    "plansearch_fix": {},
    "plansearch_pseudocode": {"sketch": "Sort, then sweep."},
    "sft_candidates": {"n": 6, "n_next": 7},
    "judge_plan_validity": {"k": 4, "plans": format_plans(["a", "b", "c", "d"])},
    "execution": {"code": "def f(x):\n    return x", "call": "f(1)"},
    "output_prediction": {"starter_code": "def f(x):", "call": "f(1)"},
}


@pytest.fixture(scope="module")
def problem():
    return load_benchmark("demo", limit=1).problems[0]


def test_every_shipped_prompt_is_covered():
    assert versions() == ["v1", "v2", "v2-short"]  # v1 stays, frozen: its runs replay exactly
    assert available() == sorted(VALUES)


SHORT = ("direct", "plan", "sft_candidates", "solve")


def test_the_short_version_keeps_each_contract_in_a_few_words(problem):
    # v2-short: the prompts a tiny word-level model reads (the strategies task, CPPO's
    # planner and solver): the statement, and only the words the role's output needs
    assert available("v2-short") == sorted(SHORT)
    for name in SHORT:
        short = render(name, problem, "v2-short", **VALUES[name])
        text = "\n".join(m["content"] for m in short)
        assert problem.statement.strip() in text and "$" not in text.replace(problem.statement, "")
        extra = text.replace(problem.statement.strip(), "").split()
        assert len(extra) <= 5, (name, extra)  # v2 adds 40-100 words around the statement
        # the same output contract: the same stop strings as v2
        assert load_prompt(name, "v2-short").render_stop(**VALUES[name]) == load_prompt(
            name
        ).render_stop(**VALUES[name])
    plan = render("plan", problem, "v2-short", n=4, n_next=5)[-1]["content"]
    assert "A: to D:" in plan
    assert (
        "Method: Sort, then sweep."
        in render("solve", problem, "v2-short", **VALUES["solve"])[-1]["content"]
    )
    with pytest.raises(DataError, match="no prompt v2-short/plansearch_sketch"):
        load_prompt("plansearch_sketch", "v2-short")


@pytest.mark.parametrize("name", sorted(VALUES))
def test_prompt_renders_completely(name, problem):
    messages = render(name, problem, **VALUES[name])
    assert [m["role"] for m in messages][-1] == "user"
    text = "\n".join(m["content"] for m in messages)
    assert "${" not in text and "$" not in text.replace(problem.statement, "")
    for stop in load_prompt(name).render_stop(**VALUES[name]):
        assert stop and "$" not in stop
    prompt = load_prompt(name)
    assert prompt.version == "v2" and prompt.description


def test_missing_values_and_unknown_prompts_are_named(problem):
    with pytest.raises(ValueError, match="needs a value for 'plan'"):
        render("solve", problem)
    with pytest.raises(DataError, match="no prompt v2/nope; known in v2: .*direct"):
        load_prompt("nope")


def test_plan_contract_text_and_stop(problem):
    user = render("plan", problem, n=4, n_next=5)[-1]["content"]
    assert "labelled A: to D:" in user and "45 words" in user
    assert problem.statement.strip() in user
    assert load_prompt("plan").render_stop(n=4, n_next=5) == ("\nE:",)
    assert load_prompt("plan").render_stop(n_next=2) == ("\nB:",)  # iid: one method


def test_plan_prompt_has_only_the_study_contract(problem):
    user = render("plan", problem, n=4, n_next=5)[-1]["content"].lower()
    assert "method 1" not in user  # the study labels methods A: .. D:
    assert "stop as soon as method d" in user and "commentary" in user
    assert "derivations" in user and "walkthroughs" in user
    # wording the contract does not have
    for extra in ("do not write code", "final answers", "differ in their algorithmic idea"):
        assert extra not in user


def test_sft_candidates_prompt_has_the_study_rules(problem):
    user = render("sft_candidates", problem, n=6, n_next=7)[-1]["content"]
    assert "labelled A: to F:" in user
    low = user.lower()
    for rule in (
        "specific to this exact problem",
        "data structure, invariant or transformation",
        "no pseudocode",
        "no generic advice",
        "no assumptions the statement does not support",
        "on its own",
    ):
        assert rule in low, rule
    assert "45 words" not in user and "words" not in low  # the study sets no word limit
    assert load_prompt("sft_candidates").render_stop(n=6, n_next=7) == ("\nG:",)


def test_solve_prompt_forbids_switching_or_merging(problem):
    user = render("solve", problem, plan="Sort, then sweep.")[-1]["content"]
    assert "do not switch to another approach" in user
    assert "do not merge in other methods" in user


def test_planner_output_in_the_contracts_form_parses_back():
    text = format_plans(["Greedy.", "Dynamic programming.", "BFS.", "Binary search."])
    assert parse_plans(text, 4).plans == [
        "Greedy.",
        "Dynamic programming.",
        "BFS.",
        "Binary search.",
    ]


def test_statements_with_dollars_and_braces_are_left_alone(problem):
    odd = type(problem)(
        benchmark="x",
        problem_id="1",
        statement="Cost is ${price} or {x} or $5.",
        tests=problem.tests,
    )
    user = render("direct", odd)[-1]["content"]
    assert "Cost is ${price} or {x} or $5." in user


def test_v1_prompts_stay_as_they_were(problem):
    # runs recorded with prompt_version v1 must replay the very same requests
    user = render("plan", problem, "v1", n=4, n_next=5)[-1]["content"]
    assert '"Method 1:" to "Method 4:"' in user
    assert load_prompt("plan", "v1").render_stop(n=4, n_next=5) == ("Method 5:",)
    assert parse_plans("Method 1: a.\nMethod 2: b.").plans == ["a.", "b."]  # still parsed
