"""`samples` of a planning method shows what was sent and received per stage (issue 45
item 6): the planner prompt and its raw output, the solver prompt each branch was sent, a
filled plan marked as filled, and a plan's newlines as newlines."""

from __future__ import annotations

import json

import pytest
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.plan.contract import GENERIC_PLAN
from cppo_bench.store.runs import iter_runs

RAW = "A: sort the values\nthen sweep them once.\nB: count with a hash map."


@pytest.fixture(scope="module")
def cppo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("stages") / "runs"
    backend = ScriptedBackend(load_benchmark("demo").problems)

    def reply(req):  # a planner giving two of the four methods, one over two lines
        if "labelled A: to" in backend.user(req):
            return RAW
        return backend.default_reply(req)

    backend.respond = reply
    args = ["run", "--method", "cppo", "--bench", "demo", "--limit", "1", "-k", "4",
            "--fill", "generic", "--max-tokens", "64", "--out", str(out), "--quiet"]  # fmt: skip
    res = invoke(args, backend)
    assert res.exit_code == 0, res.output
    (run_dir,) = iter_runs(out)
    return run_dir


def test_samples_json_has_both_prompts_the_raw_plan_and_filled_marks(cppo_run):
    res = invoke(["samples", "--run", str(cppo_run), "--json"])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(line) for line in res.stdout.splitlines()]
    (planner,) = row["stages"]
    assert planner["stage"] == "planner" and planner["received"] == [RAW]
    sent = "\n".join(m["content"] for m in planner["prompt"])
    problem = load_benchmark("demo").problems[0]
    assert problem.statement.strip()[:40] in sent and "labelled A: to D:" in sent
    attempts = row["attempts"]
    assert [a["plan_filled"] for a in attempts] == [False, False, True, True]
    assert attempts[3]["plan"] == GENERIC_PLAN
    for a in attempts:  # each branch's solver prompt carries its own plan
        solver = "\n".join(m["content"] for m in a["solver_prompt"])
        assert a["plan"] in solver and problem.statement.strip()[:40] in solver


def test_samples_text_marks_filled_plans_and_keeps_newlines(cppo_run):
    res = invoke(["samples", "--run", str(cppo_run), "--full"])
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "planner prompt (as sent)" in text and "planner output 0 (raw)" in text
    assert "solver prompt of attempt" in text and "(filled)" in text
    assert "\\x0a" not in text and "then sweep them once." in text
