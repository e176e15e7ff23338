"""Verifier throughput on real APPS programs, against baselines measured in the same run.

Every reference solution taken runs on every test of its problem, with the same number of
parallel workers, in alternating rounds (the median round of each is reported):
  - cppo-bench: verify_batch, fully isolated (one sandbox per worker, a fork per test);
  - in-process, official model and lean (inprocess_baseline.py: a forked process per
    program, every test exec'd in it, no isolation), each pool worker bound to a CPU of its
    own as our sandboxes are (verifier/cpus.py); the official model also unbound, as the
    official evaluator runs. Target (issue 16): ratio >= 1.0;
  - --against REF: this verifier as it was at a git commit (default 9bee1d7, before the
    hardening of issue 11, where the clone has it), from a temporary worktree. Target
    (issue 11): >= 0.9;
  - --naive: a fresh `python3` per test (the slowest honest way).
Then the per-test and per-program overhead over an empty program.

    python benchmarks/verifier_throughput.py [--data DIR] [--workers N] [--per-problem R]
        [--repeat-tests T] [--rounds 3] [--against REF|none] [--naive] [--exclude UID]
        [--limit N]
The shared APPS sample has one test per problem; --repeat-tests T runs each test T times, a
stand-in for the full split's ~20 tests per problem (same programs, same inputs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# this folder (the baselines) and the clone's root: runs from a clone, installed or not
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from inprocess_baseline import run_inprocess  # noqa: E402
from naive_baseline import run_naive  # noqa: E402

from cppo_bench.benchmarks import load_benchmark  # noqa: E402
from cppo_bench.problem import Problem, Test  # noqa: E402
from cppo_bench.verifier import VerifyJob, verify_batch  # noqa: E402
from cppo_bench.verifier.sandbox import sandbox_mode  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PRE_HARDENING = "9bee1d7"  # the verifier before issue 11's hardening


def _has_commit(ref: str) -> bool:
    probe = ["git", "-C", str(REPO), "cat-file", "-e", f"{ref}^{{commit}}"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def load_jobs(data: Path, per_problem: int, repeat: int, limit: int | None) -> list[VerifyJob]:
    jobs = []
    for path in sorted(data.glob("*.jsonl")):
        loaded = load_benchmark("apps", str(path), difficulty="all", subset=0)
        for problem in loaded.problems:
            if repeat > 1:
                problem = replace(problem, tests=problem.tests * repeat)
            jobs += [VerifyJob(problem, code) for code in problem.reference_solutions[:per_problem]]
    return jobs[:limit] if limit else jobs


def run_ours(jobs: list[VerifyJob], workers: int) -> tuple[float, int, int]:
    start = time.perf_counter()
    results = verify_batch(jobs, workers=workers, all_tests=True)
    elapsed = time.perf_counter() - start
    ran = sum(r.tests_total for r in results if r.verdict not in ("CE", "EMPTY"))
    return elapsed, ran, sum(r.tests_passed for r in results)


def timed_inprocess(jobs: list[VerifyJob], workers: int, official: bool = False, pin: bool = True):
    """(seconds, tests run, tests passed)."""
    start = time.perf_counter()
    ran, passed = run_inprocess(jobs, workers, official, pin)
    return time.perf_counter() - start, ran, passed


AGAINST = """
import json, sys, time
from dataclasses import replace
from pathlib import Path
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.verifier import VerifyJob, verify_batch
data, per_problem, repeat, limit, workers, exclude = json.loads(sys.argv[1])
jobs = []
for path in sorted(Path(data).glob("*.jsonl")):
    for p in load_benchmark("apps", str(path), difficulty="all", subset=0).problems:
        p = replace(p, tests=p.tests * repeat) if repeat > 1 else p
        jobs += [VerifyJob(p, c) for c in p.reference_solutions[:per_problem]]
jobs = [j for j in (jobs[:limit] if limit else jobs) if j.problem.uid not in exclude]
verify_batch(jobs[:20], workers=workers, all_tests=True)
start = time.perf_counter()
res = verify_batch(jobs, workers=workers, all_tests=True)
print(json.dumps([time.perf_counter() - start,
                  sum(r.tests_total for r in res if r.verdict not in ("CE", "EMPTY")),
                  sum(r.tests_passed for r in res)]))
"""


class Against:
    """The verifier at another commit, in a temporary worktree, run in a subprocess."""

    def __init__(self, ref: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="cppo-against-")
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", self.dir, ref],
                       check=True, capture_output=True)  # fmt: skip

    def run(self, args: argparse.Namespace) -> tuple[float, int, int]:
        spec = json.dumps([str(args.data), args.per_problem, args.repeat_tests, args.limit,
                           args.workers, args.exclude])  # fmt: skip
        env = dict(os.environ, PYTHONPATH=self.dir)
        out = subprocess.run([sys.executable, "-c", AGAINST, spec], env=env, cwd=self.dir,
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
        elapsed, ran, passed = json.loads(out.strip().splitlines()[-1])
        return elapsed, ran, passed

    def close(self) -> None:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", self.dir],
                       capture_output=True)  # fmt: skip


def empty_problem(n_tests: int) -> Problem:
    tests = tuple(Test("", "") for _ in range(n_tests))
    return Problem("bench", f"empty{n_tests}", "", tests=tests, checker="exact")


def overheads() -> dict[str, float]:
    """Seconds per test / per program for a program that does nothing, one worker."""
    n = 200
    t_many = run_ours([VerifyJob(empty_problem(n), "pass")], 1)[0]
    singles = [VerifyJob(empty_problem(1), f"pass  # {i}") for i in range(n)]
    t_singles = run_ours(singles, 1)[0]
    start = time.perf_counter()
    run_inprocess([VerifyJob(empty_problem(n), "pass")], 1)
    t_inproc = time.perf_counter() - start
    return {"ours_per_test": t_many / n, "ours_per_program": t_singles / n,
            "inprocess_per_test": t_inproc / n}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "apps")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--per-problem", type=int, default=2, help="references per problem")
    parser.add_argument("--repeat-tests", type=int, default=1, help="run each test T times")
    parser.add_argument("--limit", type=int, help="only the first N programs")
    parser.add_argument("--exclude", action="append", default=[], metavar="UID",
                        help="leave out a problem (e.g. apps/49, whose 1.3 s precomputation "
                        "per test swamps every per-test overhead)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="REF", default=PRE_HARDENING,
                        help=f"also time the verifier at this git commit (default {PRE_HARDENING}, "
                        "before the hardening, when the clone has it; 'none' to skip)")  # fmt: skip
    parser.add_argument("--naive", action="store_true", help="also a fresh python3 per test")
    args = parser.parse_args()
    jobs = load_jobs(args.data, args.per_problem, args.repeat_tests, args.limit)
    jobs = [j for j in jobs if j.problem.uid not in args.exclude]
    calls = sum(j.problem.modes == {"call"} for j in jobs)
    print(f"sandbox mode: {sandbox_mode()}; workers: {args.workers}; cores: {os.cpu_count()}")
    print(f"{len(jobs)} reference solutions ({calls} call-based) of "
          f"{len({j.problem.uid for j in jobs})} APPS problems from {args.data}, "
          f"{sum(len(j.problem.tests) for j in jobs)} tests")  # fmt: skip
    run_ours(jobs[:20], args.workers)  # warm the page cache and the sandbox probe
    runners = {
        "cppo-bench (isolated)": lambda: run_ours(jobs, args.workers),
        "in-process, official model": lambda: timed_inprocess(jobs, args.workers, True),
        "in-process, lean": lambda: timed_inprocess(jobs, args.workers),
        # as the official evaluator runs: its workers free to move between CPUs
        "official model, unbound": lambda: timed_inprocess(jobs, args.workers, True, False),
    }
    if args.against == "none" or not _has_commit(args.against):
        if args.against != "none":
            print(f"(no commit {args.against} in this clone: no comparison with it)")
        args.against = None
    against = Against(args.against) if args.against else None
    if against:
        runners[f"cppo-bench @ {args.against}"] = lambda: against.run(args)
    if args.naive:
        runners["naive (python3 per test)"] = lambda: run_naive(jobs, args.workers)
    times: dict[str, list[tuple[float, int, int]]] = {name: [] for name in runners}
    try:
        for _ in range(args.rounds):
            for name, fn in runners.items():
                times[name].append(fn())
    finally:
        if against:
            against.close()
    rates = {}
    for name, rounds in times.items():
        elapsed = statistics.median(r[0] for r in rounds)
        ran, passed = rounds[-1][1], rounds[-1][2]
        rates[name] = ran / elapsed
        print(f"{name:28s}: {ran} tests in {elapsed:6.2f}s = {rates[name]:7.1f} tests/s "
              f"({passed} passed; rounds {', '.join(f'{r[0]:.2f}' for r in rounds)})")  # fmt: skip
    ours = rates["cppo-bench (isolated)"]
    ours_passed = times["cppo-bench (isolated)"][-1][2]
    for name, rounds in times.items():  # a baseline that fails tests may skip work
        if rounds[-1][2] < 0.95 * ours_passed:
            print(f"WARNING: {name} passed {rounds[-1][2]} tests where cppo-bench passed "
                  f"{ours_passed}: its time is not comparable")  # fmt: skip
    for name in ("in-process, official model", "in-process, lean", "official model, unbound"):
        print(f"ratio vs {name}: {ours / rates[name]:.2f} (target >= 1.0)")
    if against:
        print(f"ratio vs {args.against}: {ours / rates[f'cppo-bench @ {args.against}']:.2f} "
              "(hardening cost target: >= 0.90)")  # fmt: skip
    o = overheads()
    print(f"overhead over an empty program, one worker: {o['ours_per_test'] * 1e3:.2f} ms/test "
          f"in one program, {o['ours_per_program'] * 1e3:.2f} ms per one-test program; "
          f"in-process {o['inprocess_per_test'] * 1e3:.2f} ms/test")  # fmt: skip


if __name__ == "__main__":
    main()
