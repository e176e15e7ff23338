"""`cppo-bench serve` against in-process `verify_batch` on the same programs, in alternating
rounds (the median round of each is reported):
  - in-process: one verify_batch call over every program, --workers sandboxes, every test;
  - service: a real `cppo-bench serve` subprocess (--workers sandboxes, --lanes), the programs
    sent in requests of --batch by --clients concurrent cb.VerifierClient threads;
  - --second-server: a second server process (a second worker host, simulated on this one),
    the clients spreading requests over both URLs; the workers are split between the two, so
    the machine runs the same number of sandboxes.
The mix is competition-like: the shipped demo problems (stdin and call-based), each with its
reference solution (AC), a wrong answer (WA), a crash (RE) and a syntax error (CE), every
test run. Reported: programs per second, the ratio service / in-process, the overhead per
program (seconds), and the machine's load average before and after.

    python benchmarks/serve_throughput.py [--workers 2] [--clients 4] [--batch 8] [--rounds 3]
        [--lanes 1] [--copies 1] [--second-server] [--no-reuse-sandboxes]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # the clone's root, installed or not

from cppo_bench.benchmarks import load_benchmark  # noqa: E402
from cppo_bench.problem import Problem  # noqa: E402
from cppo_bench.verifier import VerifyJob, keep_sandboxes, verify_batch  # noqa: E402

READY = "cppo-bench serve: ready on "  # cppo_bench.serve.server.READY


def mix(copies: int) -> list[VerifyJob]:
    problems: list[Problem] = load_benchmark("demo", None, difficulty="all").problems
    jobs = []
    for p in problems:
        ref = p.reference_solutions[0]
        wrong = ref.replace("+", "-", 1) if "+" in ref else ref + "\nprint('extra')"
        for code in (
            ref,
            wrong,
            "raise SystemExit('no')\n"
            if p.fn_name is None
            else f"def {p.fn_name}(*a):\n    raise ValueError\n",
            "def broken(:\n",
        ):
            jobs.append(VerifyJob(p, code))
    # each copy a distinct program (a trailing comment): nothing is judged once for many
    return [VerifyJob(j.problem, f"{j.code}\n# copy {c}") for c in range(copies) for j in jobs]


class Server:
    def __init__(self, workers: int, lanes: int, reuse: bool) -> None:
        cmd = [sys.executable, "-m", "cppo_bench", "serve", "--port", "0", "--workers",
               str(workers), "--lanes", str(lanes), "--queue-size", "64",
               "--max-programs", "1024",
               "--reuse-sandboxes" if reuse else "--fresh-sandboxes"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                     cwd=Path(__file__).resolve().parents[1])  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the ready line (or EOF if it failed to start)
        if not line.startswith(READY):
            self.proc.kill()
            raise SystemExit(f"serve did not start: {line!r}")
        self.url = line[len(READY) :].strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)


def in_process(jobs: list[VerifyJob], workers: int) -> tuple[float, list[str]]:
    started = time.perf_counter()
    results = verify_batch(jobs, workers=workers, all_tests=True)
    return time.perf_counter() - started, [r.verdict for r in results]


def through_service(jobs: list[VerifyJob], urls: list[str], clients: int,
                    batch: int) -> tuple[float, list[str]]:  # fmt: skip
    from cppo_bench.serve.client import VerifierClient

    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    starts = list(range(0, len(jobs), batch))
    for s in starts:
        todo.put(s)
    verdicts: list[str] = [""] * len(jobs)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        client = VerifierClient(urls[k % len(urls) :] + urls[: k % len(urls)], retries=60)
        while True:
            try:
                s = todo.get_nowait()
            except queue.Empty:
                return
            chunk = jobs[s : s + batch]
            try:
                got = client.verify([j.problem for j in chunk], [j.code for j in chunk])
            except BaseException as exc:  # reported after the round, never lost
                errors.append(exc)
                return
            verdicts[s : s + len(got)] = [r.verdict for r in got]

    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"a client failed: {errors[0]}")
    return time.perf_counter() - started, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8, help="programs per request")
    ap.add_argument("--lanes", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--copies", type=int, default=1, help="copies of the mix (distinct)")
    ap.add_argument("--second-server", action="store_true")
    ap.add_argument(
        "--reuse-sandboxes",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve --reuse-sandboxes, the server's default (in-process: keep_sandboxes "
        "across rounds); --no-reuse-sandboxes: serve --fresh-sandboxes",
    )
    args = ap.parse_args()
    jobs = mix(args.copies)
    load_before = os.getloadavg()
    if args.second_server:
        half = max(1, args.workers // 2)
        servers = [
            Server(half, args.lanes, args.reuse_sandboxes),
            Server(max(1, args.workers - half), args.lanes, args.reuse_sandboxes),
        ]
    else:
        servers = [Server(args.workers, args.lanes, args.reuse_sandboxes)]
    urls = [s.url for s in servers]
    local_t, remote_t = [], []
    keep = keep_sandboxes() if args.reuse_sandboxes else contextlib.nullcontext()
    try:
        with keep:
            for _ in range(args.rounds):
                t, local_v = in_process(jobs, args.workers)
                local_t.append(t)
                t, remote_v = through_service(jobs, urls, args.clients, args.batch)
                remote_t.append(t)
                if remote_v != local_v:
                    diff = sum(a != b for a, b in zip(remote_v, local_v, strict=True))
                    raise SystemExit(f"{diff} verdicts differ: service and in-process")
    finally:
        for s in servers:
            s.stop()
    load_after = os.getloadavg()
    local, remote = statistics.median(local_t), statistics.median(remote_t)
    n = len(jobs)
    tests = sum(len(j.problem.tests) for j in jobs)
    print(
        f"{n} programs ({tests} tests), {args.workers} workers, {len(servers)} server(s), "
        f"{args.clients} clients x {args.batch} programs/request, {args.rounds} rounds, "
        f"{'reused' if args.reuse_sandboxes else 'fresh'} sandboxes"
    )
    print(f"in-process verify_batch: {local:.2f} s  ({n / local:.1f} programs/s)")
    print(f"through the service:     {remote:.2f} s  ({n / remote:.1f} programs/s)")
    print(f"ratio service / in-process throughput: {local / remote:.2f}")
    print(f"overhead per program: {(remote - local) / n * 1000:+.1f} ms")
    print(f"load average (1/5/15 min) before {load_before[0]:.2f}/{load_before[1]:.2f}/"
          f"{load_before[2]:.2f}, after {load_after[0]:.2f}/{load_after[1]:.2f}/"
          f"{load_after[2]:.2f}; {os.cpu_count()} CPUs")  # fmt: skip


if __name__ == "__main__":
    main()
