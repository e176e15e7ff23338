"""Plan parsing and the rule-based validity report of the PLAN contract."""

from __future__ import annotations

import pytest

from cppo_bench.plan.contract import (
    GENERIC_PLAN,
    fill_plans,
    format_plans,
    parse_judge_verdict,
    parse_labelled,
    parse_plans,
    plan_tuple,
    validate_plans,
)
from cppo_bench.problem import Problem
from cppo_bench.problem import Test as ProblemTest

GOOD = [
    "Sort the array and sweep with two pointers to find the closest pair sum.",
    "Use dynamic programming over prefixes where the state is the best total ending at each index.",
    "Build a graph of conflicts and run breadth-first search from every unvisited vertex.",
    "Binary search on the answer and check feasibility greedily in linear time.",
]


def test_parses_labelled_methods_in_order():
    text = "\n".join(f"Method {i}: {p}" for i, p in enumerate(GOOD, 1))
    parsed = parse_plans(text, k=4)
    assert parsed.plans == GOOD and parsed.mode == "labels"


def test_parses_the_contracts_letter_labels():
    text = "\n".join(f"{c}: {p}" for c, p in zip("ABCD", GOOD, strict=True))
    parsed = parse_plans(text, k=4)
    assert parsed.plans == GOOD and parsed.mode == "labels"
    assert parse_plans("A: x.\nB: y.").plans == ["x.", "y."]
    assert parse_plans("**A:** x.\n**B:** y.\nC: z.\nD:").plans == ["x.", "y.", "z."]
    # a stray capital label inside a method is text, not a new method
    assert parse_plans("A: Greedy.\nNote: careful.\nB: DP.\nI: x").plans == [
        "Greedy.\nNote: careful.",
        "DP.\nI: x",
    ]
    assert format_plans(["x.", "y."]) == "A: x.\nB: y."


def test_parses_markdown_and_one_line_forms():
    text = "**Method 1:** Greedy by end time.  **Method 2:** Dynamic programming on intervals."
    assert parse_labelled(text) == ["Greedy by end time.", "Dynamic programming on intervals."]
    text = "### Method 1 - Use a heap.\n### Method 2. Use a segment tree."
    assert parse_labelled(text) == ["Use a heap.", "Use a segment tree."]


def test_echoed_stop_label_is_not_a_method():
    # engines that keep the stop string leave "Method 5:" at the end of a 4-tuple
    text = "Method 1: a.\nMethod 2: b.\nMethod 3: c.\nMethod 4: d.\nMethod 5:"
    assert parse_plans(text).plans == ["a.", "b.", "c.", "d."]


def test_numbered_list_fallback_and_nothing():
    parsed = parse_plans("Ideas:\n1. Greedy scan.\n2) Prefix sums.")
    assert parsed.plans == ["Greedy scan.", "Prefix sums."] and parsed.mode == "numbered"
    parsed = parse_plans("I think we should just try things.")
    assert parsed.plans == [] and parsed.mode == "none"


def test_k_caps_the_number_of_plans():
    text = "\n".join(f"Method {i}: idea {i}." for i in range(1, 7))
    assert parse_plans(text, k=4).plans == [f"idea {i}." for i in range(1, 5)]


def test_good_tuple_is_valid():
    report = validate_plans(GOOD, 4)
    assert report.valid, report.issues
    assert report.to_dict()["valid"] is True and report.to_dict()["issues"] == []


def test_count_mismatch_is_reported():
    report = validate_plans(GOOD[:3], 4)
    assert not report.valid and report.count == 3
    assert any("count 3 != 4" in issue for issue in report.issues)


def test_literal_duplicates_ignore_case_and_punctuation():
    plans = [GOOD[0], GOOD[1], GOOD[0].upper().rstrip("."), GOOD[1] + "!"]
    report = validate_plans(plans, 4)
    assert report.duplicates == [[0, 2], [1, 3]] and report.n_duplicates == 2
    assert not report.valid


@pytest.mark.parametrize(
    "plan",
    [
        "Loop with for i in range(n): and keep a running max.",
        "Define def solve(a) that returns the sorted list.",
        "Use ```dp``` with a table.",
        "Set dp[i] = max(dp[i - 1], a[i]) for every index.",
        "Read with input() and print(sum) at the end.",
    ],
)
def test_code_leakage(plan):
    report = validate_plans([plan], 1)
    assert report.code_leak == [0], plan


@pytest.mark.parametrize(
    "plan",
    [
        "Just compute it; the answer is 42.",
        "The expected output is 'YES' for the sample.",
        "Count pairs and print 7 for the example.",
    ],
)
def test_answer_leakage(plan):
    assert validate_plans([plan], 1).answer_leak == [0], plan


def test_answer_leakage_from_the_problems_own_outputs():
    problem = Problem(
        benchmark="t", problem_id="p", statement="s", tests=(ProblemTest("1 2\n", "1111111110\n"),)
    )
    plan = "Add the numbers, which gives 1111111110 on the sample."
    assert validate_plans([plan], 1, problem=problem).answer_leak == [0]
    assert validate_plans([GOOD[0]], 1, problem=problem).answer_leak == []


def test_strategy_language_is_not_leakage():
    plans = [
        "Return -1 when no valid split exists, otherwise the minimum over all split points.",
        "The answer is the maximum over all windows, found with a monotonic deque.",
    ]
    report = validate_plans(plans, 2)
    assert report.code_leak == [] and report.answer_leak == [], report.issues


def test_word_limit_is_45():
    at_limit = " ".join(["word"] * 44) + " end."
    over = " ".join(["word"] * 45) + " end."
    report = validate_plans([at_limit, over], 2)
    assert report.words == [45, 46] and report.over_words == [1]


@pytest.mark.parametrize(
    "plan",
    [
        "Greedy approach:\n- sort the items\n- take the cheapest first",
        "Do it in steps.\n1. sort\n2. scan",
        "Step 1 sort the list, step 2 merge the halves.",
        "(1) sort the array (2) binary search each query.",
    ],
)
def test_substeps(plan):
    assert validate_plans([plan], 1).substeps == [0], plan


def test_empty_plan():
    report = validate_plans(["", GOOD[0]], 2)
    assert report.empty == [0] and not report.valid


def test_fill_cycle_and_generic():
    assert fill_plans(["a", "b"], 4, "cycle") == (["a", "b", "a", "b"], [2, 3])
    assert fill_plans(["a", "b"], 4, "generic") == (["a", "b", GENERIC_PLAN, GENERIC_PLAN], [2, 3])
    assert fill_plans([], 2, "cycle") == ([GENERIC_PLAN, GENERIC_PLAN], [0, 1])
    assert fill_plans(["a", "b", "c"], 2) == (["a", "b"], [])
    # a labelled but empty method is a missing slot too (seen from the 135M model)
    assert fill_plans(["a", "", "b"], 4) == (["a", "a", "b", "b"], [1, 3])
    with pytest.raises(ValueError, match="unknown fill rule"):
        fill_plans(["a"], 2, "copy")


def test_plan_tuple_records_the_fill():
    plans, report = plan_tuple("Method 1: Greedy scan.\nMethod 2: Prefix sums.", 4)
    assert plans == ["Greedy scan.", "Prefix sums.", "Greedy scan.", "Prefix sums."]
    assert report.count == 2 and report.filled == [2, 3] and report.fill_rule == "cycle"
    assert report.duplicates == []  # fills are not the planner's duplicates
    assert not report.valid


def test_format_round_trip_and_judge_verdicts():
    assert parse_plans(format_plans(GOOD), 4).plans == GOOD
    assert parse_judge_verdict("VALID") is True
    assert parse_judge_verdict("The list is invalid.") is False
    assert parse_judge_verdict("maybe") is None
