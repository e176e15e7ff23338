"""`cppo-bench samples` / `cb.samples` (what a model did, per problem) and `verify --run`
(a stored run judged again into a new run, the stored one untouched)."""

from __future__ import annotations

import json

import pytest
from run_scripted import WRONG, ScriptedBackend, invoke

import cppo_bench as cb
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.store.runs import RECORDS, iter_runs, read_manifest, read_records

SENT: dict[str, list[dict]] = {}
HOSTILE = "```python\nprint('\x1b[2J\x1b]0;pwned\x07')\n```"


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


@pytest.fixture
def stored(tmp_path, demo):
    """A direct run of 3 problems, K=4: even seeds answer with the reference, odd ones
    with a wrong program; one problem's attempts print terminal escapes."""
    backend = ScriptedBackend(demo)
    hostile_statement = demo[2].statement.strip()

    def reply(req):
        text = backend.user(req)
        return HOSTILE if hostile_statement in text else backend.default_reply(req)

    backend.respond = reply
    cb.run("direct", "demo", backend=backend, k=4, limit=3, out=tmp_path)
    SENT.clear()  # what the model was really sent, per problem statement
    for req in (r for call in backend.calls for r in call):
        SENT.setdefault(backend.user(req), [dict(m) for m in req.messages])
    (run_dir,) = iter_runs(tmp_path)
    return run_dir


def test_samples_show_each_attempt_and_its_first_failing_test(stored, demo):
    rows = cb.samples(stored)
    by_id = {p.problem_id: p for p in demo}
    assert [r["problem_id"] for r in rows] == [p.problem_id for p in demo[:3]]
    records = read_records(stored)
    for row in rows:
        p, rec = by_id[row["problem_id"]], records[row["problem_id"]]
        # direct: the chat messages exactly as the model received them
        assert row["prompt_kind"] == "messages"
        assert row["prompt"] == SENT[row["prompt"][-1]["content"]]
        assert p.statement.strip() in row["prompt"][-1]["content"]
        assert [a["verdict"] for a in row["attempts"]] == [b.verdict for b in rec.branches]
        for a in row["attempts"]:
            if a["passed"]:
                assert a["first_failing_test"] is None
            else:  # the test the verifier named, read from the benchmark itself
                t = p.tests[a["first_failed"]]
                assert a["first_failing_test"]["input"] == t.input
                assert a["first_failing_test"]["expected"] == t.output
    assert any(a["passed"] for r in rows for a in r["attempts"])
    assert any(not a["passed"] for r in rows for a in r["attempts"])
    (one,) = cb.samples(stored, demo[1].problem_id)
    assert one["problem_id"] == demo[1].problem_id


def test_samples_cli_escapes_model_output_and_names_a_missing_problem(stored, demo):
    out = invoke(["samples", "--run", str(stored)])
    assert out.exit_code == 0, out.output
    assert demo[0].problem_id in out.output and "first failing test" in out.output
    assert "\x1b" not in out.output and "\x07" not in out.output
    assert "\\x1b[2J" in out.output  # shown, as an escape
    lines = invoke(["samples", "--run", str(stored), "--json", "--failed"]).output.splitlines()
    assert lines and all(not json.loads(line)["passed"] for line in lines)
    assert all("\x1b" not in line for line in lines)
    bad = invoke(["samples", "--run", str(stored), "--problem", "nope"])
    assert bad.exit_code == 1 and "no problem 'nope' in this run" in bad.output


def test_verify_run_rejudges_into_a_new_run_and_never_touches_the_source(stored, demo):
    # the stored verdicts are wrong for one attempt (an older verifier's mistake, say)
    path = stored / RECORDS
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    wrong = next(b for rec in lines for b in rec["branches"] if not b["passed"])
    wrong.update(passed=True, verdict="AC")
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    before = {p.name: p.read_bytes() for p in stored.iterdir()}
    result = invoke(["verify", "--run", str(stored)])
    assert result.exit_code == 0, result.output
    assert "1 attempts changed pass/fail" in result.output
    assert {p.name: p.read_bytes() for p in stored.iterdir()} == before  # untouched
    runs = sorted(iter_runs(stored.parents[3]))
    (new,) = [r for r in runs if r != stored]
    manifest = read_manifest(new)
    assert manifest.extra["rejudged"]["from"] == str(stored)
    records = read_records(new)
    assert (
        sum(b.passed for r in records.values() for b in r.branches)
        == sum(b["passed"] for rec in lines for b in rec["branches"]) - 1
    )
    # again: the same verifier and tests make the same run, which is refused, not overwritten
    again = invoke(["verify", "--run", str(stored)])
    assert again.exit_code == 1 and "already re-judged" in again.output
    # stats never pools the re-judged run with its source
    stats = invoke(["stats", "passk", "--runs", str(stored.parents[3]), "--k", "4"])
    assert "direct[rejudged]" in stats.output, stats.output


def test_verify_run_refuses_a_mismatched_bench(stored):
    result = invoke(["verify", "--run", str(stored), "--bench", "apps"])
    assert result.exit_code == 1 and "is a demo run" in result.output


def test_verify_without_bench_or_run_says_what_is_missing():
    result = invoke(["verify", "--reference"])
    assert result.exit_code == 1 and "missing bench" in result.output


def test_a_wrong_program_is_named_as_such(stored):
    rows = cb.samples(stored)
    codes = {a["code"].strip() for r in rows for a in r["attempts"] if not a["passed"]}
    assert WRONG.split("\n")[1] in codes


def test_samples_from_a_config_and_from_keywords(stored):
    from cppo_bench.api import build_config
    from cppo_bench.api.samples import SamplesConfig

    records = read_records(stored)  # the oracle: the stored branches' own pass/fail
    unsolved = [pid for pid, rec in records.items() if not any(b.passed for b in rec.branches)]
    config = build_config(SamplesConfig, {"run": stored, "failed": True})
    by_config = [r["problem_id"] for r in cb.samples(config)]
    assert by_config == [r["problem_id"] for r in cb.samples(stored, failed=True)]
    assert sorted(by_config) == sorted(unsolved)
    assert (
        len(cb.samples(stored, limit=2))
        == 2
        == len(cb.samples(SamplesConfig(str(stored), limit=2)))
    )
    for bad, needle in (({"limit": 0}, "limit 0"), ({"failed": "no"}, "failed"),
                        ({"problem": 7}, "problem")):  # fmt: skip
        with pytest.raises(cb.DataError) as err:
            cb.samples(stored, **bad)
        assert needle in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(cb.DataError, match="not both"):
        cb.samples(config, limit=1)
