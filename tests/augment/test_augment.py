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
TOTAL_REFS = (
    "def total(xs):\n    return sum(xs)\n",
    "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n",
)
TOTAL_WRONG = "def total(xs):\n    return 2 * len(xs)\n"  # 6 for [1, 2, 3], as expected
TOTAL_RIGHT = "def total(xs):\n    return sum(x for x in xs)\n"


def max_problem(refs=MAX_REFS) -> Problem:
    return Problem(
        "demo",
        "list-max",
        "Print the largest of n integers.",
        (Test("3\n1 5 2\n", "5\n"),),
        reference_solutions=refs,
        checker="lcb",
    )


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


def test_training_reward_on_the_augmented_tests(tmp_path):
    from trainers.engine.config import TrainConfig
    from trainers.engine.rewards import reward_from_config
    from trainers.engine.rollout import Rollout, RolloutRequest

    problem = max_problem()
    rec = augment_problem(problem, Settings(per_problem=6))
    (tmp_path / "augment.json").write_text(json.dumps({"bench": "demo"}))
    (tmp_path / "tests.jsonl").write_text(json.dumps(rec) + "\n")
    rollouts = [Rollout(RolloutRequest(problem, 0), (), (), f"```python\n{code}```", "stop")
                for code in (MAX_WRONG, MAX_RIGHT)]  # fmt: skip
    plain = reward_from_config(TrainConfig(verify_workers=1))(rollouts)
    strong = reward_from_config(TrainConfig(verify_workers=1, reward_tests=str(tmp_path)))(rollouts)
    assert [s.reward for s in plain] == [1.0, 1.0]
    assert [s.reward for s in strong] == [0.0, 1.0]
    assert [s.rollout for s in strong] == rollouts


def _demo_file(tmp_path: Path) -> Path:
    path = tmp_path / "weak.jsonl"
    rows = [max_problem().to_dict(), total_problem().to_dict()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_augment_is_deterministic_and_resumable_and_audit_prints_pass_plus(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "helpers"))
    from run_scripted import ScriptedBackend, invoke

    data = _demo_file(tmp_path)
    base = ["augment", "--bench", "demo", "--data", str(data), "--per-problem", "5",
            "--workers", "1", "--quiet"]  # fmt: skip
    for out in ("a", "b"):
        res = invoke([*base, "--out", str(tmp_path / out)])
        assert res.exit_code == 0, res.output

    def tests(d: str) -> list:
        text = (tmp_path / d / "tests.jsonl").read_text()
        return [json.loads(x)["tests"] for x in text.splitlines()]

    assert tests("a") == tests("b") and all(tests("a"))
    # a killed augment: half a line; the resume redoes that problem only, to the same result
    path = tmp_path / "b" / "tests.jsonl"
    text = path.read_text()
    path.write_text(text[: text.index("\n") + 1] + text[text.index("\n") + 1 :][:40])
    res = invoke([*base, "--out", str(tmp_path / "b")])
    assert res.exit_code == 0 and "1 done now" in res.output, res.output
    assert tests("a") == tests("b")
    res = invoke([*base, "--out", str(tmp_path / "b"), "--seed", "1"])
    assert res.exit_code != 0 and "other settings (seed)" in res.output

    # a run: list-max gets the right program on even seeds, the wrong one on odd seeds;
    # list-total only ever the wrong one (which passes its one original test)
    def respond(req):
        text = req.messages[-1]["content"]
        if "sum of a list" in text:
            return f"```python\n{TOTAL_WRONG}```"
        return f"```python\n{MAX_RIGHT if req.params.seed % 2 == 0 else MAX_WRONG}```"

    problems = [max_problem(), total_problem()]
    run = ["run", "--method", "direct", "--bench", "demo", "--data", str(data), "-k", "4",
           "--out", str(tmp_path / "runs"), "--quiet", "--workers", "1"]  # fmt: skip
    res = invoke(run, ScriptedBackend(problems, respond=respond))
    assert res.exit_code == 0, res.output
    res = invoke([*run, "--tests", str(tmp_path / "a")], ScriptedBackend(problems, respond=respond))
    assert res.exit_code == 0, res.output
    dirs = sorted(p.parent for p in (tmp_path / "runs").rglob("manifest.json"))
    assert len(dirs) == 2  # judged with the test set: another run
    plain = next(
        d for d in dirs if "test_set" not in json.loads((d / "manifest.json").read_text())["extra"]
    )
    res = invoke(["audit", str(plain), "--tests", str(tmp_path / "a"), "--quiet",
                  "--workers", "1", "--resamples", "200"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "pass@4 vs pass@4+" in res.output and "weakest original tests" in res.output
    assert "100.0%" in res.output and "50.0%" in res.output  # pass@4, pass@4+
    res = invoke(["audit", str(plain), "--tests", str(tmp_path / "a"), "--quiet", "--strict",
                  "--workers", "1", "--resamples", "200"])  # fmt: skip
    assert res.exit_code == 0 and "strict" in res.output, res.output
    strict = json.loads(next((plain / "test_audits").glob("*-strict.json")).read_text())
    assert strict["strict"] and strict["pass_at_k_plus"] == 0.5
    doc = json.loads(next((plain / "test_audits").glob("*.json")).read_text())
    assert doc["pass_at_k"] == 1.0 and doc["pass_at_k_plus"] == 0.5
    total, top = doc["problems"]["list-total"], doc["problems"]["list-max"]
    assert total["pass"] == [True] * 4 and total["pass_plus"] == [False] * 4
    assert top["pass"] == [True] * 4 and 0 < sum(top["pass_plus"]) < 4  # even seeds only
    # the report's table, from the stored audit
    from cppo_bench.report.plus_tables import plus_tables
    from cppo_bench.report.render import to_markdown

    tables = plus_tables(tmp_path / "runs", resamples=200)
    row = tables[0].rows[0]
    assert [c.value for c in row.cells[:3]] == [1.0, 0.5, 0.5] and row.cells[3].value == 2
    weak = {r.labels[1]: r.cells[1].value for r in tables[1].rows}
    assert set(weak) == {"list-max", "list-total"} and all(v > 0 for v in weak.values())
    assert "pass@K+" in to_markdown(tables[0])


def test_oracle_model_uses_model_written_references_and_says_so(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "helpers"))
    from run_scripted import LIVE, ScriptedBackend, invoke

    bare = [Problem(**{**max_problem().to_dict(), "tests": max_problem().tests,
                       "reference_solutions": ()})]  # fmt: skip
    data = tmp_path / "bare.jsonl"
    data.write_text(json.dumps(bare[0].to_dict()) + "\n")
    base = ["augment", "--bench", "demo", "--data", str(data), "--per-problem", "3",
            "--workers", "1", "--quiet"]  # fmt: skip
    res = invoke([*base, "--out", str(tmp_path / "refs")])
    assert res.exit_code == 0 and "skipped 1: fewer than 2" in res.output, res.output
    assert "needs --oracle model" in res.output

    def respond(req):  # two different right programs, by seed
        return f"```python\n{MAX_REFS[req.params.seed % 2]}```"

    LIVE[:] = [ScriptedBackend(bare, respond=respond)]
    res = invoke([*base, "--out", str(tmp_path / "model"), "--oracle", "model",
                  "--generator-model", "scripted", "--generator-backend",
                  "run_scripted:live", "--references", "4"])  # fmt: skip
    assert res.exit_code == 0 and "model-written references" in res.output, res.output
    ts = read_test_set(tmp_path / "model")
    rec = ts.records["list-max"]
    assert ts.config["oracle"] == rec["oracle"] == "model" and rec["status"] == "augmented"
    assert len(rec["model_references"]) >= 2
    assert not judge(max_problem(), MAX_WRONG, ts) and judge(max_problem(), MAX_RIGHT, ts)


def test_call_candidates_do_not_depend_on_the_hash_seed():
    import os
    import subprocess
    import sys

    seeds = json.dumps([json.dumps(["abba", "dog cat cat dog"])])
    code = (
        "import json, random\n"
        "from cppo_bench.augment.mutate_call import call_candidates\n"
        f"print([c.input for c in call_candidates(json.loads({seeds!r}), 12, random.Random(3))])"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**env, "PYTHONHASHSEED": h},
        ).stdout  # fmt: skip
        for h in ("1", "2", "3", "4")
    }
    assert len(outs) == 1 and "abba" in outs.pop()


def test_more_references_are_tried_when_the_first_fail_the_original_tests():
    wrong = tuple(f"input()\nprint({v})\n" for v in (1, 2, 3))
    rec = augment_problem(max_problem((*wrong, *MAX_REFS)), Settings(per_problem=3))
    assert rec["status"] == "augmented" and rec["references"] == [3, 4]
    assert sorted(rec["dropped_references"]) == ["0", "1", "2"]


def test_lm_eval_tasks_read_a_test_set_option(tmp_path):
    from cppo_bench.lm_eval_tasks.docs import load_problems

    rec = augment_problem(max_problem(), Settings(per_problem=3))
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "augment.json").write_text(json.dumps({"bench": "demo"}))
    (tmp_path / "set" / "tests.jsonl").write_text(json.dumps(rec) + "\n")
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(max_problem().to_dict()) + "\n")
    plain = load_problems("demo", str(data), {})[0]
    strong = load_problems("demo", str(data), {"tests": str(tmp_path / "set")})[0]
    assert len(plain.tests) == 1 and len(strong.tests) == 1 + len(rec["tests"]) > 1


def test_format_keeps_lengths_orders_parity_and_permutations():
    # "n k" with k <= n, then a string of n characters with n/2 zeros; n even
    inputs = ["2\n4 2\n0101\n6 1\n001011\n"]
    fmt = infer_format(inputs)
    assert fmt.lengths == {(1, 0): 2, (3, 0): 4}
    assert fmt.relations == {-2: [(0, 1, ">")]}
    for c in stdin_candidates(inputs, 30, random.Random(0)):
        lines = [x.split() for x in c.input.splitlines()]
        for n_k, s in ((lines[1], lines[2][0]), (lines[3], lines[4][0])):
            n, k = map(int, n_k)
            assert n == len(s) and k < n and n % 2 == 0 and s.count("0") * 2 == n, c
    perm = infer_format(["2\n5\n3 1 2 5 4\n4\n2 4 1 3\n"])
    assert perm.permutations and perm.distinct_lists
    for c in stdin_candidates(["2\n5\n3 1 2 5 4\n4\n2 4 1 3\n"], 20, random.Random(1)):
        rows = [x.split() for x in c.input.splitlines()]
        assert sorted(map(int, rows[2])) == list(range(1, int(rows[1][0]) + 1)), c


def test_verify_reads_tests_and_a_bad_test_set_is_one_line(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "helpers"))
    from run_scripted import invoke

    data = _demo_file(tmp_path)
    res = invoke(["augment", "--bench", "demo", "--data", str(data), "--per-problem", "4",
                  "--workers", "1", "--quiet", "--out", str(tmp_path / "set")])  # fmt: skip
    assert res.exit_code == 0, res.output
    progs = tmp_path / "progs.jsonl"
    progs.write_text(json.dumps({"problem_id": "list-max", "code": MAX_WRONG}) + "\n")
    verify = ["verify", "--bench", "demo", "--data", str(data), "--programs", str(progs),
              "--workers", "1"]  # fmt: skip
    assert '"passed": true' in invoke(verify).output
    res = invoke([*verify, "--tests", str(tmp_path / "set")])
    assert '"passed": false' in res.output and "8 tests added to 2 of 2 problems" in res.output
    res = invoke(["verify", "--bench", "apps", "--data", str(data), "--programs", str(progs),
                  "--tests", str(tmp_path / "set")])  # fmt: skip
    assert res.exit_code != 0 and "not for 'apps'" in res.output
    lines = (tmp_path / "set" / "tests.jsonl").read_text().splitlines()
    (tmp_path / "set" / "tests.jsonl").write_text(
        "\n".join([lines[0], '{"problem_id": "x", "tests": [{"input": 1}]}', lines[1]]) + "\n"
    )
    res = invoke([*verify, "--tests", str(tmp_path / "set")])
    assert (
        res.exit_code != 0 and "tests.jsonl:2: a test's input and output must be text" in res.output
    )
    assert "Traceback" not in res.output


def test_a_planted_bad_audit_file_is_skipped(tmp_path):
    from cppo_bench.augment.audit import read_audits

    (tmp_path / "r" / "test_audits").mkdir(parents=True)
    (tmp_path / "r" / "test_audits" / "x.json").write_text('{"problems": {"a": {"pass": 1}}}')
    (tmp_path / "r" / "test_audits" / "y.json").write_text("not json")
    assert read_audits(tmp_path) == []
