"""The shipped demo benchmark: its shape, its loader, and that every reference solution passes
its own tests (with the verifier when it is importable, and with a plain subprocess runner)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.benchmarks.demo import packaged_path
from cppo_bench.errors import DataError
from cppo_bench.problem import Problem, load_problem_jsonl
from cppo_bench.problem import Test as ProblemTest  # aliased: pytest would collect "Test"


@pytest.fixture(scope="module")
def demo() -> list[Problem]:
    result = load_benchmark("demo")
    assert result.errors == []
    return result.problems


def test_registered_and_loads_from_package(demo: list[Problem]) -> None:
    assert "demo" in BENCHMARKS
    assert packaged_path().is_file()
    assert 20 <= len(demo) <= 40
    assert len({p.problem_id for p in demo}) == len(demo)
    assert all(p.benchmark == "demo" for p in demo)


def test_problem_shape(demo: list[Problem]) -> None:
    modes = [p.modes for p in demo]
    assert all(len(m) == 1 for m in modes), "a problem mixes stdin and call tests"
    n_call = sum(m == {"call"} for m in modes)
    assert 0.2 <= n_call / len(demo) <= 0.45  # about a third call-based
    for p in demo:
        assert len(p.tests) >= 5, p.uid
        assert p.reference_solutions, p.uid
        assert p.difficulty in {"easy", "medium", "hard"}, p.uid
        assert p.checker == "lcb"
        assert p.tests[0].kind == "public" and all(t.kind == "hidden" for t in p.tests[1:])
        assert len({t.input for t in p.tests}) == len(p.tests), f"{p.uid}: repeated test input"
        if p.modes == {"call"}:
            assert p.starter_code.startswith(f"def {p.fn_name}(")
            for t in p.tests:
                assert isinstance(json.loads(t.input), list)
                json.loads(t.output)
        else:
            # the statement's example is the first (public) test
            assert "\nInput\n" in p.statement and "\nOutput\n" in p.statement
            example = p.statement.split("Example\n", 1)[1]
            assert p.tests[0].input.strip() in example and p.tests[0].output.strip() in example
    assert {p.difficulty for p in demo} == {"easy", "medium", "hard"}


def test_easy_tier_comes_first(demo: list[Problem]) -> None:
    """The default set-up must show signal: `--limit 5` runs only one-line tasks that the
    embedded 135M model can solve (on the rest it scores zero)."""
    easy = [p for p in demo if p.difficulty == "easy"]
    assert len(easy) >= 6
    assert demo[: len(easy)] == easy
    for p in easy:
        assert len(p.tests) >= 5, p.uid
        body = [line for line in p.reference_solutions[0].splitlines() if line.strip()]
        assert len(body) <= 2, p.uid
    assert sum(p.modes == {"call"} for p in easy) > len(easy) / 2


# --- running reference solutions -------------------------------------------------------------

_CALL_DRIVER = """
import json, sys
namespace = {"__name__": "solution"}
exec(compile(open(sys.argv[1]).read(), "solution.py", "exec"), namespace)
print(json.dumps(namespace[sys.argv[2]](*json.loads(sys.stdin.read()))))
"""


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


def run_test(code: str, test: ProblemTest, workdir: Path) -> str | None:
    """Run `code` on one test in a fresh interpreter; None if it passes, else why not."""
    if test.mode == "call":
        src = workdir / "solution.py"
        src.write_text(code)
        argv = [sys.executable, "-c", _CALL_DRIVER, str(src), str(test.fn_name)]
    else:
        argv = [sys.executable, "-c", code]
    try:
        proc = subprocess.run(
            argv, input=test.input, capture_output=True, text=True, timeout=30, cwd=workdir
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    if test.mode == "call":
        ok = json.loads(proc.stdout) == json.loads(test.output)
    else:
        ok = _lines(proc.stdout) == _lines(test.output)
    return None if ok else f"wrong output {proc.stdout[:80]!r}, expected {test.output[:80]!r}"


def subprocess_failures(problem: Problem, workdir: Path) -> list[str]:
    code = problem.reference_solutions[0]
    failures = []
    for i, test in enumerate(problem.tests):
        case_dir = workdir / f"{problem.problem_id}-{i}"
        case_dir.mkdir()
        why = run_test(code, test, case_dir)
        if why is not None:
            failures.append(f"{problem.uid} test {i}: {why}")
    return failures


def test_reference_solutions_pass_subprocess(demo: list[Problem], tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda p: subprocess_failures(p, tmp_path), demo)
        failures = [f for fs in results for f in fs]
    assert failures == []


def test_subprocess_runner_catches_wrong_solution(demo: list[Problem], tmp_path: Path) -> None:
    # the checker above must be able to fail: a wrong program for each mode is rejected
    by_mode = {next(iter(p.modes)): p for p in demo}
    stdin_p, call_p = by_mode["stdin"], by_mode["call"]
    assert run_test("print(42424242)", stdin_p.tests[0], tmp_path) is not None
    wrong = f"def {call_p.fn_name}(*args):\n    return 'nope'\n"
    assert run_test(wrong, call_p.tests[0], tmp_path) is not None
    assert run_test(call_p.reference_solutions[0], call_p.tests[0], tmp_path) is None


def test_a_program_that_defines_nothing_fails_every_problem(demo: list[Problem]) -> None:
    """A call-based function name the checker's prelude already defines (`add` is
    operator.add under the lcb checker) would let any program pass."""
    from cppo_bench.verifier import VerifyJob, verify_batch

    results = verify_batch([VerifyJob(problem=p, code="print('wrong')\n") for p in demo])
    assert [p.uid for p, r in zip(demo, results, strict=True) if r.passed] == []


def test_reference_solutions_pass_verifier(demo: list[Problem]) -> None:
    from cppo_bench.verifier import VerifyJob, verify_batch

    jobs = [VerifyJob(problem=p, code=p.reference_solutions[0]) for p in demo]
    results = verify_batch(jobs, all_tests=True)
    bad = [
        f"{p.uid}: {r.verdict} {r.detail}"
        for p, r in zip(demo, results, strict=True)
        if not r.passed
    ]
    assert bad == []


# --- loader behaviour ------------------------------------------------------------------------


def test_custom_path_and_filters(demo: list[Problem], tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in demo[:3]))
    got = load_benchmark("demo", data=str(path)).problems
    assert got == demo[:3]
    easy = load_benchmark("demo", difficulty="easy").problems
    assert easy and all(p.difficulty == "easy" for p in easy) and len(easy) < len(demo)
    with pytest.raises(DataError, match="unknown option"):
        load_benchmark("demo", release="v6")
    with pytest.raises(DataError, match="no such file"):
        load_benchmark("demo", data=str(tmp_path / "missing.jsonl"))


def test_malformed_records_reported(demo: list[Problem], tmp_path: Path) -> None:
    good = demo[0].to_dict()
    no_tests = dict(demo[1].to_dict(), tests=[])
    bad_mode = dict(demo[2].to_dict())
    bad_mode["tests"] = [dict(bad_mode["tests"][0], mode="stdout")]
    extra = dict(demo[3].to_dict(), colour="red")
    lines = [json.dumps(good), "{not json", json.dumps(no_tests), json.dumps(bad_mode)]
    lines += [json.dumps(extra), json.dumps([1, 2]), json.dumps(good)]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = load_problem_jsonl(path)
    assert [p.uid for p in result.problems] == [demo[0].uid]
    reasons = [str(e) for e in result.errors]
    assert len(reasons) == 6
    assert "line 2" in reasons[0]
    assert demo[1].problem_id in reasons[1] and "no tests" in reasons[1]
    assert demo[2].problem_id in reasons[2] and "stdout" in reasons[2]
    assert "colour" in reasons[3]
    assert "JSON object" in reasons[4]
    assert "duplicate" in reasons[5]
    with pytest.raises(DataError, match="line 2"):
        load_problem_jsonl(path, strict=True)
