"""Our verifier against the REAL LiveCodeBench evaluator, end to end, same programs, same run.

The official evaluator is LiveCodeBench's `lcb_runner/evaluation/compute_code_generation_metrics
.evaluate_generations` (a process pool; per program a Manager and a Process that execs every
test in-process with `testing_util.run_test`, no isolation). It is not on PyPI: pass the
path of a local clone (`git clone https://github.com/LiveCodeBench/LiveCodeBench /tmp/lcb`);
nothing of it is copied here.

Workload: the shared APPS sample has one test per problem, so tests are generated: each
integer of the sample input is redrawn (uniformly in [1, itself], the first line kept), and
an input is kept when the problem's first two references agree on its output (or the one
reference runs cleanly); outputs are the references' (the workload is cached as JSON).
`--mix competition` (the default) makes it like real competition programs: numpy users
first, a share of the others importing numpy, inputs up to `--scale` times larger and the
tests with the largest outputs kept, then `--big-outputs` programs printing ~64 KB a test
(multi-case inputs with their cases repeated) (`--mix plain`: the earlier workload).

    python benchmarks/lcb_official_baseline.py --lcb-clone /tmp/lcb [--programs 50]
        [--tests 17] [--workers 2] [--rounds 5] [--workload /tmp/lcb_workload.json]
        [--end-to-end] [--fresh]

Prints the median seconds of each evaluator over alternating rounds and their ratio
(official / ours: above 1 means we are faster), with every round's numbers. In-process
(the default) times `verify_batch` against `evaluate_generations`, imports not timed;
`--end-to-end` times whole processes as a user runs them: `python -m cppo_bench verify
--all-tests` on the workload written as an APPS JSONL file against a script that imports
LiveCodeBench's evaluator and runs it. `--fresh` adds ours with CPPO_SANDBOX_REUSE=0 (a
fresh child for every test) to the same rounds: the cost of that isolation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from cppo_bench.benchmarks import load_benchmark  # noqa: E402
from cppo_bench.problem import Problem, Test  # noqa: E402
from cppo_bench.verifier import VerifyJob, verify_batch  # noqa: E402

_INT = re.compile(r"(?<![\w.-])\d+(?![\w.])")


def _perturb(text: str, rng: random.Random, scale: int = 1) -> str:
    first, sep, rest = text.partition("\n")
    return (
        first
        + sep
        + _INT.sub(
            lambda m: str(rng.randint(1, max(1, int(m.group()) * rng.randint(1, scale)))), rest
        )
    )


def _run_ref(code: str, data: str, timeout: float = 2) -> str | None:
    try:
        done = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    return done.stdout if done.returncode == 0 and done.stdout.strip() else None


def build_workload(
    data: Path,
    programs: int,
    tests: int,
    seed: int,
    mix: str = "competition",
    numpy_share: float = 0.3,
    scale: int = 4,
    big: int = 4,
) -> list[dict]:
    """mix "competition" (issue 36: like real competition programs): the references that
    import numpy first, and `numpy_share` of the others made to import it at the top, as
    much competition Python does; inputs redrawn up to `scale` times larger, keeping the
    tests with the largest outputs; then `big` programs with large outputs (_big_outputs).
    mix "plain": the first stdin problems as they are."""
    rng = random.Random(seed)
    comp = mix == "competition"
    problems = [p for path in sorted(data.glob("*.jsonl"))
                for p in load_benchmark("apps", str(path), difficulty="all", subset=0).problems
                if p.reference_solutions and p.tests[0].mode == "stdin"
                and not p.uid.endswith("/49")]  # fmt: skip
    if comp:  # (a stable order: numpy users first)
        problems.sort(key=lambda p: not any("numpy" in r for r in p.reference_solutions[:2]))
    out: list[dict] = []
    for p in problems:
        if len(out) >= programs:
            break
        refs = sorted(p.reference_solutions[:2], key=lambda r: "numpy" not in r) if comp else \
            p.reference_solutions[:2]  # fmt: skip
        candidates = [p.tests[0].input] + [
            _perturb(p.tests[0].input, rng, scale if comp else 1)
            for _ in range((2 if comp else 3) * tests)
        ]
        cases = []
        with ThreadPoolExecutor(2) as pool:
            for inp in candidates:
                outs = list(pool.map(lambda c, i=inp: _run_ref(c, i), refs))
                if outs[0] is not None and all(o == outs[0] for o in outs):
                    cases.append((inp, outs[0]))
                if len(cases) == (2 if comp else 1) * tests:
                    break
                if comp and len(cases) < len(candidates) // 8 and inp is candidates[tests]:
                    break  # (most inputs too heavy for the references: next problem)
        if comp:  # the heaviest: the largest outputs
            cases = sorted(cases, key=lambda c: -len(c[1]))[:tests]
        elif len(cases) > tests:
            cases = cases[:tests]
        if len(cases) == tests:
            code = refs[0]
            if comp and "numpy" not in code and rng.random() < numpy_share:
                code = "import numpy as np\n" + code
            out.append({"uid": p.uid, "code": code, "tests": cases})
            print(f"workload: {len(out)}/{programs} {p.uid}", file=sys.stderr)
    if comp and big:
        used = {w["uid"] for w in out}
        out += _big_outputs([p for p in problems if p.uid not in used], big, tests, rng)
    return out


def _repeat_blocks(text: str, times: int) -> str | None:
    """A multi-case input (a count t, then t blocks of equal lines) with its blocks repeated
    `times` times and the count raised to match: the same kind of input, `times` larger."""
    lines = text.strip("\n").split("\n")
    head = lines[0].strip()
    if not head.isdigit() or int(head) < 1 or (len(lines) - 1) % int(head):
        return None
    return f"{int(head) * times}\n" + "\n".join(lines[1:] * times) + "\n"


def _big_outputs(problems: list[Problem], count: int, tests: int, rng: random.Random,
                 target: int = 64_000) -> list[dict]:  # fmt: skip
    """Programs that print large outputs (issue 36: about 2x our cost once): shared problems
    whose input is a count of cases and the cases, the ones printing the most per input byte
    first, their cases repeated until the output is about `target` bytes, each test's values
    redrawn first; kept where both references agree on every test and the outputs are at
    least a quarter of the target."""
    ranked = []
    for p in problems:
        first = _run_ref(p.reference_solutions[0], p.tests[0].input)
        if first and _repeat_blocks(p.tests[0].input, 2) is not None:
            ranked.append((-len(first) / max(1, len(p.tests[0].input)), p.uid, p, len(first)))
    out: list[dict] = []
    for _, _, p, size in sorted(ranked, key=lambda r: r[:2]):
        if len(out) >= count:
            break
        refs = p.reference_solutions[:2]
        times = max(2, min(20_000, target // max(1, size)))
        cases = []
        with ThreadPoolExecutor(2) as pool:
            for k in range(2 * tests):
                inp = _repeat_blocks(_perturb(p.tests[0].input, rng), times)
                outs = list(pool.map(lambda c, i=inp: _run_ref(c, i, 5), refs))
                if inp and outs[0] and all(o == outs[0] for o in outs):
                    cases.append((inp, outs[0]))
                if len(cases) == tests or (not cases and k > 2):
                    break
        if len(cases) == tests and min(len(o) for _, o in cases) >= target // 4:
            out.append({"uid": p.uid, "code": refs[0], "tests": cases})
            size = sum(len(o) for _, o in cases) // tests
            print(f"workload: large outputs {len(out)}/{count} {p.uid} ({size} B)", file=sys.stderr)
    return out


def run_ours(work: list[dict], workers: int) -> float:
    jobs = [
        VerifyJob(Problem("apps", w["uid"], "", tests=tuple(Test(i, o) for i, o in w["tests"]),
                          checker="lcb", time_limit_s=6.0), w["code"])
        for w in work
    ]  # fmt: skip
    start = time.perf_counter()
    results = verify_batch(jobs, workers=workers, all_tests=True)
    elapsed = time.perf_counter() - start
    print(f"  ours: {sum(r.tests_passed for r in results)} tests passed", file=sys.stderr)
    return elapsed


def write_e2e(work: list[dict], data: Path, folder: Path) -> tuple[Path, Path]:
    """The workload as an APPS JSONL file (each problem's own record, its tests replaced by
    the workload's) and a programs JSONL, for `cppo-bench verify`."""
    want = {w["uid"].split("/", 1)[1]: w for w in work}
    records = []
    for path in sorted(data.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            w = want.get(str(rec.get("problem_id")))
            if w is not None:
                rec["input_output"] = json.dumps({"inputs": [i for i, _ in w["tests"]],
                                                  "outputs": [o for _, o in w["tests"]]})  # fmt: skip
                records.append(json.dumps(rec))
    bench, programs = folder / "apps.jsonl", folder / "programs.jsonl"
    bench.write_text("\n".join(records) + "\n")
    programs.write_text("".join(json.dumps({"problem_id": k, "code": w["code"]}) + "\n"
                                for k, w in want.items()))  # fmt: skip
    return bench, programs


def run_ours_e2e(bench: Path, programs: Path, workers: int, fresh: bool = False) -> float:
    cmd = [sys.executable, "-m", "cppo_bench", "verify", "--bench", "apps", "--data", str(bench),
           "-o", "difficulty=all", "--programs", str(programs), "--all-tests",
           "--workers", str(workers), "--out", str(bench.parent / "results.jsonl")]  # fmt: skip
    env = dict(os.environ, CPPO_SANDBOX_REUSE="0" if fresh else "1")
    start = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=REPO)
    elapsed = time.perf_counter() - start
    rows = [json.loads(x) for x in (bench.parent / "results.jsonl").read_text().splitlines()]
    print(f"  ours: {sum(r['tests_passed'] for r in rows)} tests passed", file=sys.stderr)
    return elapsed


def run_official(work: list[dict], workers: int, clone: Path, e2e: bool = False) -> float:
    code = (
        "import json, sys, time\n"
        f"sys.path.insert(0, {str(clone)!r})\n"
        "from lcb_runner.evaluation.compute_code_generation_metrics import evaluate_generations\n"
        "work = json.load(sys.stdin)\n"
        "samples = [{'input_output': json.dumps({'inputs': [i for i, _ in w['tests']],\n"
        "            'outputs': [o for _, o in w['tests']]})} for w in work]\n"
        "gens = [[w['code']] for w in work]\n"
        "start = time.perf_counter()\n"
        f"res, _ = evaluate_generations(samples, gens, num_process_evaluate={workers}, timeout=6)\n"
        "elapsed = time.perf_counter() - start\n"
        "passed = sum(x is True for r in res.values() for g in r for x in g)\n"
        "print(json.dumps({'elapsed': elapsed, 'passed': passed}))\n"
    )
    # its own interpreter (it sets process-wide limits); in-process, the import is not timed
    # (our imports are not either: this process has them loaded); end to end, all of it is
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps(work),
                          capture_output=True, text=True, check=True)  # fmt: skip
    whole = time.perf_counter() - start
    got = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  official: {got['passed']} tests passed", file=sys.stderr)
    return whole if e2e else float(got["elapsed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lcb-clone", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "apps")
    parser.add_argument("--programs", type=int, default=50)
    parser.add_argument("--tests", type=int, default=17)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workload", type=Path, default=Path("/tmp/lcb_workload_v3.json"))
    parser.add_argument("--mix", choices=("competition", "plain"), default="competition")
    parser.add_argument("--numpy-share", type=float, default=0.3)
    parser.add_argument("--scale", type=int, default=2)
    parser.add_argument(
        "--big-outputs",
        type=int,
        default=4,
        help="competition mix: this many programs with ~400 KB outputs",
    )
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="time whole processes: `cppo-bench verify` against the evaluator",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="also time ours with a fresh child for every test"
    )
    args = parser.parse_args()
    if not (args.lcb_clone / "lcb_runner" / "evaluation" / "testing_util.py").is_file():
        sys.exit(f"{args.lcb_clone}: not a LiveCodeBench clone (no lcb_runner/evaluation)")
    if args.workload.is_file():
        work = json.loads(args.workload.read_text())
    else:
        work = build_workload(args.data, args.programs, args.tests, args.seed, args.mix,
                              args.numpy_share, args.scale, args.big_outputs)  # fmt: skip
        args.workload.write_text(json.dumps(work))
    n_tests = sum(len(w["tests"]) for w in work)
    e2e = args.end_to_end
    tmp = Path(tempfile.mkdtemp(prefix="lcb_e2e_"))
    bench, programs = write_e2e(work, args.data, tmp) if e2e else (tmp, tmp)
    contenders = {
        "ours": (lambda: run_ours_e2e(bench, programs, args.workers)) if e2e
        else (lambda: run_ours(work, args.workers)),
        "official": lambda: run_official(work, args.workers, args.lcb_clone, e2e),
    }  # fmt: skip
    if args.fresh:
        contenders["ours_fresh"] = (lambda: run_ours_e2e(bench, programs, args.workers, True)) \
            if e2e else (lambda: _with_env("CPPO_SANDBOX_REUSE", "0", lambda: run_ours(work, args.workers)))  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for r in range(args.rounds):
        for name, fn in contenders.items():
            t = fn()
            times[name].append(t)
            print(f"round {r}: {name} {t:.2f}s", file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    report = {"programs": len(work), "tests": n_tests, "workers": args.workers,
              "rounds": args.rounds, "end_to_end": e2e, "load_1min": os.getloadavg()[0]}  # fmt: skip
    for name, ts in times.items():
        report[f"{name}_s"] = [round(t, 3) for t in ts]
        report[f"{name}_median_s"] = round(med[name], 3)
    report["ratio_official_over_ours"] = round(med["official"] / med["ours"], 3)
    if args.fresh:
        report["ratio_official_over_ours_fresh"] = round(med["official"] / med["ours_fresh"], 3)
    print(json.dumps(report, indent=1))


def _with_env(name: str, value: str, fn):
    old = os.environ.get(name)
    os.environ[name] = value  # (read when each sandbox starts: verify_batch starts its own)
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


if __name__ == "__main__":
    main()
