"""D_alg: the judge prompt, reply parsing, one batched backend call, coverage; and one
end-to-end run with the embedded default model as judge."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import pytest

from cppo_bench.backends.base import GenRequest, GenResult
from cppo_bench.diversity import (
    TAXONOMY,
    algorithmic_diversity,
    judge_request,
    label_tuples,
    parse_label,
    unique_categories,
)


class ScriptedJudge:
    """A Backend whose reply to each item is looked up by a keyword in the prompt."""

    name = "scripted"
    model_id = "scripted-judge"

    def __init__(self, script: dict[str, str]) -> None:
        self.script = script
        self.batches: list[int] = []
        self.closed = False

    def generate(self, requests: Sequence[GenRequest], progress=None) -> list[GenResult]:
        self.batches.append(len(requests))
        out = []
        for req in requests:
            assert req.messages is not None  # (every request here is a chat)
            user = req.messages[-1]["content"]
            item = user.split("Strategy:\n", 1)[-1].split("Program:\n", 1)[-1]
            reply = next((r for key, r in self.script.items() if key in item), "no idea")
            out.append(GenResult(text=reply, num_tokens=3, finish_reason="stop"))
        if progress:
            progress(len(requests))
        return out

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("DP", "DP"),
        ("Category: Dynamic Programming", "DP"),
        ("**greedy**", "greedy"),
        ("graph.", "graph"),
        ("search/backtrack", "search/backtrack"),
        ("Backtracking", "search/backtrack"),
        ("number theory", "number-theory/math"),
        ("Math", "number-theory/math"),
        ("simulation", "simulation"),
        ("Data structures (heap)", "data-structure"),
        ("divide and conquer", "divide-and-conquer"),
        ("Brute-force", "brute-force"),
        ("other", "other"),
        ("graph search with DP", "graph"),  # the first category named wins
        ("adp mathematical", None),  # whole words only
        ("I am not sure.", None),
        ("", None),
    ],
)
def test_parse_label(reply, label):
    assert parse_label(reply) == label


def test_prompt_lists_the_taxonomy_and_has_a_code_variant():
    plan = judge_request("Sort by end time and pick greedily.", "plan")
    code = judge_request("print(sum(map(int, input().split())))", "code")
    for req in (plan, code):
        user = req.messages[-1]["content"]
        assert all(f"- {label}:" in user for label in TAXONOMY)
        assert req.params.temperature == 0.0
        assert req.messages[0]["role"] == "system"
    assert "Strategy:\nSort by end time" in plan.messages[-1]["content"]
    assert "Program:\n```\nprint(sum(" in code.messages[-1]["content"]
    with pytest.raises(ValueError):
        judge_request("x", "essay")


def test_one_batched_call_labels_and_counts_unparseable():
    judge = ScriptedJudge({"memo": "DP", "sort": "Greedy", "grid": "graph", "weird": "???"})
    tuples = [
        ["memo over prefixes", "sort then sweep", "grid bfs", "weird idea"],
        ["memo again", "memo on digits"],
    ]
    res = label_tuples(tuples, judge)
    assert judge.batches == [6]  # one call for every member of every tuple
    assert res.labels == [["DP", "greedy", "graph", "other"], ["DP", "DP"]]
    assert res.replies[0][3] == "???"
    assert (res.unparseable, res.total, res.misses) == (1, 6, [1, 0])
    assert res.unparseable_rate == pytest.approx(1 / 6)
    assert [algorithmic_diversity(t) for t in res.labels] == [1.0, 0.5]
    assert algorithmic_diversity(res.labels[0], denominator="taxonomy") == pytest.approx(0.4)


def test_code_variant_and_progress():
    judge = ScriptedJudge({"heapq": "data-structure"})
    seen = []
    res = label_tuples(
        [["import heapq\nheapq.heappush(h, 1)", "x = 1"]], judge, "code", progress=seen.append
    )
    assert res.labels == [["data-structure", "other"]] and seen == [2]


def test_coverage_validates_labels():
    assert unique_categories(["DP", "DP", "greedy"]) == 2
    with pytest.raises(ValueError, match="outside the taxonomy"):
        unique_categories(["DP", "dynamic"])
    with pytest.raises(ValueError):
        algorithmic_diversity([])


def test_backend_returning_too_few_results_is_an_error():
    class Short(ScriptedJudge):
        def generate(self, requests, progress=None):
            return super().generate(requests)[:-1]

    with pytest.raises(RuntimeError, match="returned 1 results for 2"):
        label_tuples([["a", "b"]], Short({}))


@pytest.mark.slow
def test_embedded_default_model_as_judge():
    if importlib.util.find_spec("cppo_bench.backends.hf") is None:
        pytest.skip("the hf backend (cppo_bench/backends/hf.py) is not in this tree yet")
    from cppo_bench.backends import BACKENDS

    judge = BACKENDS.get("hf")(None)  # None: the embedded default model (SmolLM2-135M-Instruct)
    try:
        tuples = [
            ["Dynamic programming over prefixes.", "Greedy: sort by deadline.",
             "Breadth-first search on the graph.", "Try every subset."],
            ["Simulate the process step by step.", "Use a heap to pick the smallest."],
        ]  # fmt: skip
        res = label_tuples(tuples, judge)
    finally:
        judge.close()
    assert [len(t) for t in res.labels] == [4, 2] and res.total == 6
    assert all(label in TAXONOMY for t in res.labels for label in t)
    assert res.unparseable == sum(parse_label(r) is None for t in res.replies for r in t)
    for labels in res.labels:
        assert 1 / len(labels) <= algorithmic_diversity(labels) <= 1.0
