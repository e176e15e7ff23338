"""The verifier's own hostile and fidelity programs (tests/verifier: imported, not copied),
judged through a real `cppo-bench serve` by `cb.VerifierClient`: the same verdicts as
in-process `verify_batch` with every test run, nothing leaks, and the service still serves."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from serve_process import Service  # noqa: E402

import cppo_bench as cb  # noqa: E402
from cppo_bench.problem import Problem  # noqa: E402
from cppo_bench.problem import Test as Case  # noqa: E402
from cppo_bench.verifier import Limits, VerifyJob, verify_batch  # noqa: E402
from tests.verifier import test_verifier_hostile as hostile  # noqa: E402
from tests.verifier import test_verifier_programs as fidelity  # noqa: E402


@pytest.fixture(scope="module", params=[("--fresh-sandboxes",), ()], ids=["fresh", "reused"])
def service(request):
    # fresh: each request starts its own sandboxes; reused (the default): idle ones kept
    # between requests
    svc = Service("--workers", "2", "--max-output-mb", "4", *request.param)
    yield svc
    svc.stop()


def same(service_results: list, local_results: list) -> list:
    """The fields a verdict is judged by (times and memory differ run to run)."""
    keys = ("verdict", "passed", "tests_passed", "tests_total", "first_failed", "code")
    return [[getattr(a, k) for k in keys] == [getattr(b, k) for k in keys]
            for a, b in zip(service_results, local_results, strict=True)]  # fmt: skip


def test_hostile_programs_get_the_in_process_verdicts(service, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text(f"{hostile.SECRET}\n")
    listener = hostile.Listener()
    try:
        programs = hostile.hostile_programs(tmp_path, listener.port)
        loaded = [Problem.from_dict(json.loads(line))
                  for line in hostile.problem_file(tmp_path).read_text().splitlines()]  # fmt: skip
        by_id = {p.problem_id: p for p in loaded}
        names = list(programs)
        problems = [by_id["hostile"]] * len(names) + [by_id["echo"]]
        codes = [programs[n][0] for n in names] + ["print(input())"]
        client = cb.VerifierClient(service.url, timeout=600)
        remote = client.verify(problems, codes, output_mb=4)
        local = verify_batch([VerifyJob(p, c) for p, c in zip(problems, codes, strict=True)],
                             workers=2, all_tests=True, limits=Limits(output_mb=4))  # fmt: skip
    finally:
        listener.close()
    for name, r, here in zip(names, remote, local, strict=False):
        allowed = programs[name][1]
        assert r.verdict in allowed and not r.passed, (name, r)
        assert here.verdict in allowed, (name, here)
    # every verdict the same, but the fork bomb's race between its limits (TLE or MLE)
    agree = same(remote, local)
    assert all(ok for name, ok in zip([*names, "echo"], agree, strict=True) if name != "fork_bomb")
    assert remote[-1].verdict == "AC"  # the sandbox judges an honest program afterwards
    assert not (tmp_path / "outside").exists()
    assert listener.received == [] and listener.connections == 0
    time.sleep(0.2)  # the same settle time as the hostile suite, before looking in /proc
    assert hostile.stray_processes() == []
    assert service.get("/health")[0] == 200  # still serving


def test_fidelity_programs_get_the_in_process_verdicts(service) -> None:
    jobs = [fidelity._job(name) for name in fidelity.PROGRAMS]
    # call-based too: a returned value judged by each checker, a wrong one, a crash
    for checker in ("lcb", "apps", "exact"):
        for fn, code in (("pair", "def pair():\n    return (1, [2, 3])\n"),
                         ("pair", "def pair():\n    return [1, [2, 4]]\n"),
                         ("pair", "def pair():\n    raise ValueError('no')\n")):  # fmt: skip
            case = Case("[]", json.dumps([1, [2, 3]]), mode="call", fn_name=fn)
            problem = Problem("t", f"{fn}-{checker}", "", tests=(case, case), checker=checker)
            jobs.append(VerifyJob(problem, code))
    # lone surrogates (valid JSON escapes): judged as in-process, in the program and a test
    odd = Problem("t", "odd", "", tests=(Case("\ud800\n", "\ud800\n"), Case("a\n", "a\n")),
                  checker="lcb")  # fmt: skip
    jobs += [VerifyJob(odd, "x = '\udfff'\nprint(input())"), VerifyJob(odd, "print('\ud800')")]
    # test 0 fails, test 1 passes: only a run of every test counts the second
    split = Problem("t", "split", "", tests=(Case("1\n", "2\n"), Case("1\n", "1\n")), checker="lcb")
    jobs.append(VerifyJob(split, "print(input())"))
    client = cb.VerifierClient([service.url], timeout=600)
    remote = client.verify([j.problem for j in jobs], [j.code for j in jobs])
    local = verify_batch(jobs, workers=2, all_tests=True)
    assert all(same(remote, local)), [
        (a.verdict, b.verdict) for a, b in zip(remote, local, strict=True)
    ]
    assert [r.verdict for r in remote[: len(fidelity.PROGRAMS)]] == ["AC"] * len(fidelity.PROGRAMS)
    assert {r.verdict for r in remote[len(fidelity.PROGRAMS) :]} >= {"WA", "RE"}
    assert all(r.tests_total == 2 for r in remote)
    assert (remote[-1].verdict, remote[-1].tests_passed) == ("WA", 1)  # every test run


def test_sandboxes_are_kept_between_requests_unless_fresh(service, request) -> None:
    """The default keeps a request's sandboxes for the next (counted by the server itself,
    its live sandbox processes after each request: the same ones, not more); with
    --fresh-sandboxes none outlives its request."""
    from cppo_bench.serve.node import metrics

    echo = Problem("t", "echo", "", tests=(Case("1\n", "1\n"), Case("2\n", "2\n")), checker="lcb")
    client = cb.VerifierClient(service.url, timeout=600)
    after = []
    for _ in range(2):
        got = client.verify([echo] * 4, ["print(input())"] * 4)
        assert [r.verdict for r in got] == ["AC"] * 4
        after.append(metrics(service.url)["sandboxes"])
    if request.node.callspec.id == "fresh":
        assert after == [0, 0]
    else:
        assert 1 <= after[0] == after[1] <= 2  # --workers 2: kept, and reused, not added
