"""Plumbing of the sampling methods (direct, plan_and_solve, fixed_strategy, skills,
output_prediction) and the Method base, against a scripted backend."""

from __future__ import annotations

import pytest
from run_scripted import ScriptedBackend

from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.errors import DataError
from cppo_bench.methods import METHODS, OptionError
from cppo_bench.methods.base import close_fence, derive_seed
from cppo_bench.methods.direct import render_messages
from cppo_bench.methods.output_prediction import canonical_answer, extract_answer
from cppo_bench.methods.plan_and_solve import extract_plan
from cppo_bench.problem import Problem
from cppo_bench.problem import Test as ProblemTest
from cppo_bench.util.registry import UnknownNameError

SAMPLING = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=300)
ALL = [
    "cppo",
    "direct",
    "fixed_strategy",
    "output_prediction",
    "plan_and_solve",
    "plansearch",
    "skills",
]


@pytest.fixture(scope="module")
def problems() -> list[Problem]:
    return load_benchmark("demo", limit=3).problems


def run(name, problems, k=4, seed=0, backend=None, **options):
    backend = backend or ScriptedBackend(problems)
    method = METHODS.get(name).from_options(options)
    return method.run(problems, backend, k=k, seed=seed, sampling=SAMPLING), backend


def test_registry_knows_every_method_and_names_them_on_a_typo():
    assert METHODS.names() == ALL
    for name in ALL:
        assert METHODS.get(name).name == name
    with pytest.raises(UnknownNameError, match="known: cppo, direct"):
        METHODS.get("cpo")


def test_option_parsing_is_typed_and_strict(tmp_path):
    cppo = METHODS.get("cppo")
    method = cppo.from_options({"inference": "iid", "tuple-size": "4", "planner_max_tokens": "64"})
    assert method.options.inference == "iid" and method.options.tuple_size == 4
    assert method.options_dict()["planner_max_tokens"] == 64
    with pytest.raises(OptionError, match="no option 'strategies'"):
        cppo.from_options({"strategies": "a;b"})
    with pytest.raises(OptionError, match="not one of joint, iid"):
        cppo.from_options({"inference": "both"})
    with pytest.raises(OptionError, match="not an integer"):
        cppo.from_options({"tuple_size": "four"})
    hints = tmp_path / "hints.txt"
    hints.write_text("Sort, then scan.\n\nUse a heap.\n")
    fixed = METHODS.get("fixed_strategy")
    assert fixed.from_options({"strategies": f"@{hints}"}).options.strategies == (
        "Sort, then scan.",
        "Use a heap.",
    )
    assert fixed.from_options({"strategies": "a, b; c"}).options.strategies == ("a, b", "c")
    with pytest.raises(OptionError, match="cannot read"):
        fixed.from_options({"strategies": f"@{tmp_path / 'missing.txt'}"})


def test_no_integer_option_of_any_method_passes_the_cap():
    # every count a method takes becomes requests a problem: each integer option of every
    # registered method (new ones too) is refused past MAX_OPTION_INT, through the one parser
    import dataclasses
    import typing

    from cppo_bench.methods.base import MAX_OPTION_INT

    checked = 0
    for name in METHODS.names():
        options = METHODS.get(name).options_type
        hints = typing.get_type_hints(options)
        for field in dataclasses.fields(options):
            if hints[field.name] is int:
                with pytest.raises(OptionError, match=f"option {field.name}: 65537 is past 65,536"):
                    METHODS.get(name).from_options({field.name: str(MAX_OPTION_INT + 1)})
                checked += 1
    assert checked >= 6  # tuple_size, planner_max_tokens, n_skills, n_candidates, ...


def test_seeds_are_stable_and_distinct():
    assert derive_seed(0, "demo/a", "sample", 1) == derive_seed(0, "demo/a", "sample", 1)
    seeds = {
        derive_seed(s, u, r, i)
        for s in (0, 1)
        for u in ("demo/a", "demo/b")
        for r in ("sample", "plan")
        for i in range(4)
    }
    assert len(seeds) == 32 and all(0 <= s < 2**31 for s in seeds)


def test_close_fence():
    assert close_fence("```python\nprint(1)") == "```python\nprint(1)\n```"
    assert close_fence("```python\nprint(1)\n```") == "```python\nprint(1)\n```"
    assert close_fence("print(1)") == "print(1)"


def test_direct_batches_every_problem_and_maps_results_back(problems):
    outputs, backend = run("direct", problems, k=4)
    assert len(backend.calls) == 1 and len(backend.calls[0]) == 12  # one batch, N x K
    for p, out, start in zip(problems, outputs, range(0, 12, 4), strict=True):
        reqs = backend.calls[0][start : start + 4]
        assert out.problem_id == p.problem_id and len(out.attempts) == 4
        assert all(r.messages == render_messages(p) for r in reqs)  # same prompt, K seeds
        assert [a.seed for a in out.attempts] == [r.params.seed for r in reqs]
        assert len({a.seed for a in out.attempts}) == 4
        for a in out.attempts:  # even seed -> the reference program, odd -> wrong
            assert (p.reference_solutions[0] in a.completion) == (a.seed % 2 == 0)
        assert out.planner_tokens == 0 and out.solver_tokens == sum(a.tokens for a in out.attempts)
    params = backend.calls[0][0].params
    assert params.stop == ("\n```\n",) and params.max_tokens == 300 and params.temperature == 0.7


def test_direct_prompt_is_system_plus_user(problems):
    roles = [m["role"] for m in render_messages(problems[0])]
    assert roles == ["system", "user"]
    assert problems[0].statement.strip() in render_messages(problems[0])[1]["content"]


def test_call_based_prompt_names_the_function():
    demo = load_benchmark("demo").problems
    call = next(p for p in demo if p.fn_name)
    user = render_messages(call)[1]["content"]
    assert f"`{call.fn_name}`" in user and "standard input" not in user


def test_plan_and_solve_keeps_the_plan(problems):
    reply = "Plan: add the two numbers.\n```python\nprint(sum(map(int, input().split())))\n```"
    backend = ScriptedBackend(respond=lambda req: reply)
    outputs, _ = run("plan_and_solve", problems, k=2, backend=backend)
    assert [a.plan for a in outputs[0].attempts] == ["add the two numbers."] * 2
    assert 'First write "Plan:"' in backend.calls[0][0].messages[-1]["content"]
    assert extract_plan("```python\nx\n```") is None


def test_fixed_strategy_gives_branch_i_hint_i(problems):
    outputs, backend = run("fixed_strategy", problems, k=6, strategies="A-hint;B-hint;C-hint")
    assert len(backend.calls) == 1
    expected = ["A-hint", "B-hint", "C-hint"] * 2
    for out in outputs:
        assert [a.plan for a in out.attempts] == expected and out.plans == [expected]
    contents = [r.messages[-1]["content"] for r in backend.calls[0][:6]]
    assert all(f"Method: {h}\n" in c for h, c in zip(expected, contents, strict=True))


def test_skills_prefix_each_sample_with_its_skill(problems):
    outputs, backend = run("skills", problems, k=6, n_skills=4)
    firsts = [r.messages[-1]["content"].split("\n", 1)[0] for r in backend.calls[0][:6]]
    assert firsts == ["<skill_0>", "<skill_1>", "<skill_2>", "<skill_3>", "<skill_0>", "<skill_1>"]
    assert outputs[0].extra["skills"] == [0, 1, 2, 3, 0, 1]
    rest = backend.calls[0][0].messages[-1]["content"].split("\n", 1)[1]
    assert rest == render_messages(problems[0])[-1]["content"]
    outputs, backend = run("skills", problems[:1], k=2, n_skills=2, prefixes="[A];[B]")
    assert backend.calls[0][1].messages[-1]["content"].startswith("[B]\n")
    with pytest.raises(OptionError, match="2 prefixes for n_skills=4"):
        METHODS.get("skills").from_options({"prefixes": "a;b"})


def _prediction_problem(pid: str, label: str) -> Problem:
    """Shaped like the lcb_execution loader's records."""
    return Problem(
        benchmark="lcb_execution",
        problem_id=pid,
        statement=f"def f(x):\n    return x % {pid}\n",
        tests=(),
        task="execution",
        label=label,
        metadata={"input": f"f({pid})"},
    )


def test_output_prediction_extracts_answers():
    problems = [_prediction_problem("1", "0"), _prediction_problem("2", "[1, 2]")]
    outputs, backend = run("output_prediction", problems, k=3)
    first = backend.calls[0][0]
    assert first.params.stop == ("[/ANSWER]",)
    assert "return x % 1" in first.messages[-1]["content"]
    assert "`f(1)`" in first.messages[-1]["content"]
    for out, reqs in zip(outputs, (backend.calls[0][:3], backend.calls[0][3:]), strict=True):
        assert [a.answer for a in out.attempts] == [str(r.params.seed % 3) for r in reqs]
    assert extract_answer("think...\n[ANSWER]assert f(3) == [1,2][/ANSWER]") == "[1,2]"
    assert extract_answer("[ANSWER] 'ab'") == "'ab'"  # unclosed: the stop string ate the tag
    assert extract_answer("```\n5\n```") == "5"
    assert extract_answer("so it is\n17") == "17"
    assert extract_answer("   ") is None


def test_test_output_prediction_prompt_and_json_answers():
    problem = Problem(
        benchmark="lcb_output_prediction",
        problem_id="q_0",
        statement="Return whether n is odd, given a flag.",
        tests=(ProblemTest("[3, true]", "true", mode="call", fn_name="isOdd", kind="public"),),
        starter_code="class Solution:\n    def isOdd(self, n: int, flag: bool) -> bool:",
        task="output_prediction",
        label="true",
    )
    outputs, backend = run("output_prediction", [problem], k=1)
    user = backend.calls[0][0].messages[-1]["content"]
    assert "`isOdd(3, True)`" in user and "class Solution:" in user
    # test outputs are JSON, models answer in Python: both spellings are one answer
    assert canonical_answer("true") == canonical_answer("True") == "True"
    assert canonical_answer("null") == "None" and canonical_answer("[1,2]") == "[1, 2]"
    assert canonical_answer("'a'") == canonical_answer('"a"')
    assert canonical_answer(" ") is None
    # a model's answer is a stranger's text: nested past any parser's depth it is an answer
    # that matches nothing, not a RecursionError out of the scoring
    for deep in ("[" * 100_000, '{"a":' * 50_000):
        assert canonical_answer(deep) == deep
    bad = Problem(
        benchmark="x", problem_id="1", statement="s", tests=(), task="execution", label="1"
    )
    with pytest.raises(DataError, match="without a call"):
        run("output_prediction", [bad], k=1)


def test_methods_refuse_the_wrong_task(problems):
    with pytest.raises(OptionError, match="use --method output_prediction"):
        METHODS.get("direct")().check([_prediction_problem("1", "0")], 4)
    with pytest.raises(OptionError, match="is a codegen problem"):
        METHODS.get("output_prediction")().check(problems, 4)
    with pytest.raises(OptionError, match="K must be >= 1"):
        METHODS.get("direct")().check(problems, 0)


def test_backend_returning_too_few_results_is_caught(problems):
    class Short(ScriptedBackend):
        def generate(self, requests, progress=None):
            return super().generate(requests)[:-1]

    with pytest.raises(RuntimeError, match="returned 11 results for 12 requests"):
        run("direct", problems, backend=Short(problems))


def test_problem_without_tests_is_fine_for_prompts():
    p = Problem(benchmark="x", problem_id="1", statement="S", tests=(ProblemTest("", ""),))
    assert "S" in render_messages(p)[1]["content"]
