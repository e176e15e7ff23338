"""Issue 42 item 1: under `all_tests` nothing a program can observe depends on a verdict.

The same programs, printing the same outputs, run twice over: once against expected outputs
they match (AC, judged in one comparison) and once against ones they miss (WA, and costly to
judge: 60,000 blank lines before a wrong answer under the APPS rule; a 60 KB token walk
under the CodeContests rule). Each test reports on stderr what a program can see: the
monotonic and wall clocks when it starts and ends, and its scratch folder's times. From
those: the gaps between a program's consecutive tests, from a program's last test to the
next program's first, and from that to the birth of the next program's scratch.

Rounds alternate (right, wrong, right, ...) so that the machine's load drifts over both;
the margin is derived from the right rounds among themselves (the control), never a fixed
threshold, and the test first proves it has the power to see the judging cost it looks for.
Every available sandbox mode, both kept-child settings, one worker.
"""

from __future__ import annotations

import statistics
import time

import pytest

from cppo_bench.problem import Checker, Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier import compare as compare_module
from cppo_bench.verifier import launch as launch_module
from cppo_bench.verifier import sandbox as sandbox_module

PROGRAMS, TESTS, ROUNDS = 6, 5, 3

# What the program sees, as one stderr line per test (the answer goes to stdout).
PROBE = """\
import os, sys, time
m0, w0 = time.monotonic(), time.time()
st = os.stat(".")
sys.stdout.write(OUT)
sys.stdout.flush()
sys.stderr.write("SEEN %d %r %r %r %r %r\\n" % (P, m0, w0, st.st_ctime, st.st_mtime,
                                               time.monotonic()))
"""

# checker -> (the program's output, an expected output it matches, one it misses)
CASES = {
    "apps": ("\n" * 60_000 + "42\n", "42\n", "43\n"),
    "codecontests": ("1 " * 30_000 + "7\n", "1 " * 30_000 + "7\n", "1 " * 30_000 + "8\n"),
}


@pytest.fixture(params=["bwrap", "unshare"])
def mode(request, monkeypatch) -> str:
    """bubblewrap and the unshare fallback (rlimits has no scratch tmpfs per test)."""
    monkeypatch.setenv(sandbox_module.MODE_ENV, request.param)
    monkeypatch.setattr(sandbox_module, "_MODE", None)
    monkeypatch.setattr(sandbox_module, "_WARNED", set())
    return request.param


def _jobs(checker: Checker, right: bool) -> list[VerifyJob]:
    out, good, bad = CASES[checker]
    expected = good if right else bad
    jobs = []
    for p in range(PROGRAMS):
        problem = Problem("timeline", f"p{p}", "", checker=checker, time_limit_s=5,
                          tests=tuple(Case(f"{t}\n", expected) for t in range(TESTS)))  # fmt: skip
        jobs.append(VerifyJob(problem, f"P = {p}\nOUT = {out!r}\n" + PROBE))
    return jobs


def _round(checker: Checker, right: bool, monkeypatch) -> dict[str, list[float]]:
    """One verify_batch (all_tests, one worker); the gaps its programs saw."""
    seen: list[list[float]] = []
    original = sandbox_module.Sandbox.run_test

    def spy(self, data: bytes, timeout: float):
        run = original(self, data, timeout)
        for line in run.stderr.splitlines():
            if line.startswith("SEEN "):
                seen.append([float(x) for x in line.split()[1:]])
        return run

    monkeypatch.setattr(sandbox_module.Sandbox, "run_test", spy)
    results = verify_batch(_jobs(checker, right), workers=1, all_tests=True)
    monkeypatch.setattr(sandbox_module.Sandbox, "run_test", original)
    want = ("AC", TESTS) if right else ("WA", 0)
    assert all((r.verdict, r.tests_passed) == want for r in results), results
    assert len(seen) == PROGRAMS * TESTS, seen  # every test ran and reported
    gaps: dict[str, list[float]] = {"test to test": [], "program to program": [], "scratch": []}
    for prev, cur in zip(seen, seen[1:], strict=False):
        if prev[0] == cur[0]:  # the next test of the same program
            gaps["test to test"].append(cur[1] - prev[1])
        else:  # the next program's first test, and its scratch's birth, after the last one's end
            gaps["program to program"].append(cur[1] - prev[5])
            gaps["scratch"].append(max(cur[3], cur[4]) - (prev[2] + prev[5] - prev[1]))
    return gaps


def _iqr(xs: list[float]) -> float:
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]


def _ms(xs: list[float]) -> list[float]:
    return [round(x * 1e3, 2) for x in xs]


def _judge_cost(checker: str) -> float:
    """What judging one wrong output costs beyond a right one, on this machine now."""
    check = compare_module.get_checker(checker).stdin
    out, good, bad = CASES[checker]
    t0 = time.perf_counter()
    assert check(out, good)
    t1 = time.perf_counter()
    assert not check(out, bad)
    return (time.perf_counter() - t1) - (t1 - t0)


# a load burst can hide the judging cost from one measurement: measure again; a machine still
# too noisy to see a judging's cost after them cannot answer, and the test says so (a skip
# naming the figures) instead of failing: a leak moves wrong - right, which is still asserted
# within the control's margin, not the margin itself
ATTEMPTS = 5
# The smallest difference attributed to a verdict. On a quiet machine the control's spread
# falls to tens of microseconds, below what one call leaves the next one in allocator and
# collector state (its judging's garbage: the "later call" channel SECURITY.md leaves open);
# any judging on a program's timeline costs tens of milliseconds here (on the old code: 4-315
# ms), so a 1 ms floor keeps every leak of judging in sight.
FLOOR_S = 1e-3


def _measure(checker: Checker, monkeypatch) -> list[tuple[float, float, float, str]]:
    """(wrong - right, margin, judging cost, detail) for each gap a program sees."""
    right: list[dict[str, list[float]]] = []
    wrong: list[dict[str, list[float]]] = []
    for _ in range(ROUNDS):
        right.append(_round(checker, True, monkeypatch))
        wrong.append(_round(checker, False, monkeypatch))
    cost = _judge_cost(checker)
    found = []
    for what in right[0]:
        r = [x for g in right for x in g[what]]
        w = [x for g in wrong for x in g[what]]
        # the control: how far apart right rounds alone fall, and how wide a round's gaps are
        meds = [statistics.median(g[what]) for g in right]
        margin = max(2 * max(max(meds) - min(meds), _iqr(r)), FLOOR_S)
        diff = statistics.median(w) - statistics.median(r)
        detail = (f"{what}: wrong - right = {diff * 1e3:.2f} ms, margin {margin * 1e3:.2f} ms "
                  f"(judging one wrong output costs {cost * 1e3:.0f} ms here); quartiles (ms): "
                  f"right {_ms(statistics.quantiles(r, n=4))}, "
                  f"wrong {_ms(statistics.quantiles(w, n=4))}")  # fmt: skip
        found.append((diff, margin, cost, detail))
    return found


@pytest.mark.parametrize("reuse", ["1", "0"])
@pytest.mark.parametrize("checker", sorted(CASES))
def test_what_a_program_sees_does_not_depend_on_its_verdicts(
    mode, reuse, checker, monkeypatch
) -> None:
    monkeypatch.setenv(launch_module.REUSE_ENV, reuse)
    for attempt in range(ATTEMPTS):
        found = _measure(checker, monkeypatch)
        # power: a gap that held the judging of even one wrong output would be seen; under a
        # load burst the control is too wide to tell, and the measurement is made again. A
        # difference past the margin is measured again too: a leak of judging (tens of ms
        # here) shows in every attempt, a load burst on the wrong rounds (a 1.02 ms median
        # against a 1 ms floor, once, in CI beside the training tests) does not
        powered = all(cost > 2 * margin for _, margin, cost, _ in found)
        within = all(abs(diff) <= margin for diff, margin, _, _ in found)
        if (powered and within) or attempt == ATTEMPTS - 1:
            break
    for diff, margin, _, detail in found:  # past the control's own spread: a finding
        assert abs(diff) <= margin, detail
    for _, margin, cost, detail in found:
        if not cost > 2 * margin:
            pytest.skip(
                f"inconclusive after {ATTEMPTS} attempts, the machine is too noisy: {detail}"
            )


# (on main, with judging between tests: a timer's median gap 0.64 -> 8.3 ms, margin 0.5 ms)
TIMER = "import sys, time\nm = time.monotonic()\nprint(input())\nsys.stderr.write('SEEN %d %r\\n' % (P, m))\n"


def _two_workers(right: bool, monkeypatch) -> list[float]:
    """One program costly to judge on one worker, light timer programs on the other (they all
    run while the first one's tests do): the gaps between a timer's consecutive tests."""
    out, good, bad = CASES["apps"]
    cases = tuple(Case(f"{t}\n", good if right else bad) for t in range(TESTS * 3))
    costly = VerifyJob(Problem("timeline", "costly", "", checker="apps", tests=cases),
                       f"import sys\nsys.stdout.write({out!r})\n")  # fmt: skip
    timers = [VerifyJob(Problem("timeline", f"t{p}", "", checker="apps",
                                tests=tuple(Case(f"{t}\n", f"{t}\n") for t in range(TESTS * 3))),
                        f"P = {p}\n" + TIMER) for p in range(6)]  # fmt: skip
    seen: list[tuple[float, float]] = []
    original = sandbox_module.Sandbox.run_test

    def spy(self, data: bytes, timeout: float):
        run = original(self, data, timeout)
        for line in run.stderr.splitlines():
            if line.startswith("SEEN "):
                p, m = line.split()[1:]
                seen.append((float(p), float(m)))
        return run

    monkeypatch.setattr(sandbox_module.Sandbox, "run_test", spy)
    results = verify_batch([costly, *timers], workers=2, all_tests=True)
    monkeypatch.setattr(sandbox_module.Sandbox, "run_test", original)
    assert [r.verdict for r in results] == ["AC" if right else "WA"] + ["AC"] * 6, results
    return [b[1] - a[1] for a, b in zip(seen, seen[1:], strict=False) if a[0] == b[0]]


def test_a_program_does_not_see_another_workers_verdicts(mode, monkeypatch) -> None:
    """Workers share the verifier's interpreter lock: judging a wrong output in one worker
    made the other worker's hand-overs wait, so a program timing its tests saw it."""
    right: list[list[float]] = []
    wrong: list[list[float]] = []
    for _ in range(ROUNDS):
        right.append(_two_workers(True, monkeypatch))
        wrong.append(_two_workers(False, monkeypatch))
    r = [x for g in right for x in g]
    w = [x for g in wrong for x in g]
    meds = [statistics.median(g) for g in right]
    # the control: how far apart right rounds' medians fall, and a median's standard error
    margin = max(3 * max(max(meds) - min(meds), _iqr(r) / len(r) ** 0.5), FLOOR_S)
    diff = statistics.median(w) - statistics.median(r)
    assert abs(diff) <= margin, (
        f"wrong - right = {diff * 1e3:.2f} ms, margin {margin * 1e3:.2f} ms; quartiles (ms): "
        f"right {_ms(statistics.quantiles(r, n=4))}, wrong {_ms(statistics.quantiles(w, n=4))}"
    )
