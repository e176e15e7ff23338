"""Speed of the hierarchical bootstrap: the vectorised cppo_bench.metrics version against a
plain Python-loop version of the same procedure, both timed in this run.

    python benchmarks/stats_speed.py [--resamples 1000 --problems 300 --seeds 3 --methods 8]

Target: 1000 resamples over 300 problems x 3 seeds x 8 methods in about a second.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a clone, installed or not

from cppo_bench.metrics import hierarchical_bootstrap  # noqa: E402


def loop_bootstrap(
    outcomes: dict[str, list[list[float]]], a: str, b: str, resamples: int, seed: int
) -> tuple[dict[str, list[float]], float]:
    """The textbook loop: per resample, draw problems, then a seed per method, then average."""
    rng = random.Random(seed)
    names = list(outcomes)
    n_problems = len(next(iter(outcomes.values()))[0])
    samples: dict[str, list[float]] = {m: [] for m in names}
    for _ in range(resamples):
        drawn = [rng.randrange(n_problems) for _ in range(n_problems)]
        for m in names:
            seeds = outcomes[m]
            row = seeds[rng.randrange(len(seeds))]
            total = 0.0
            for i in drawn:
                total += row[i]
            samples[m].append(total / n_problems)
    worse = sum(1 for x, y in zip(samples[a], samples[b], strict=True) if x - y <= 0)
    return samples, (1 + worse) / (1 + resamples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--problems", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--methods", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=10, help="timed runs of the vectorised version")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    rates = np.linspace(0.30, 0.45, args.methods)
    data = {
        f"m{i}": (rng.random((args.seeds, args.problems)) < p).astype(np.float64)
        for i, p in enumerate(rates)
    }
    a, b = f"m{args.methods - 1}", "m0"

    hierarchical_bootstrap(data, resamples=10, seed=0)  # warm-up (imports, allocator)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        result = hierarchical_bootstrap(data, resamples=args.resamples, seed=0)
        p_vec = result.p_value(a, b)
        times.append(time.perf_counter() - t0)
    t_vec = min(times)

    as_lists = {m: x.tolist() for m, x in data.items()}
    t0 = time.perf_counter()
    loop_samples, p_loop = loop_bootstrap(as_lists, a, b, args.resamples, seed=0)
    t_loop = time.perf_counter() - t0

    shape = f"{args.resamples} resamples x {args.problems} problems x {args.seeds} seeds x {args.methods} methods"
    print(f"hierarchical bootstrap, {shape}")
    print(f"  vectorised (numpy)  : {t_vec * 1000:9.1f} ms  (best of {args.repeats})")
    print(f"  plain Python loop   : {t_loop * 1000:9.1f} ms")
    print(f"  speed-up            : {t_loop / t_vec:9.1f}x")
    # Different random streams, same procedure: the two must agree up to resampling noise.
    print(f"  {f'p({a} > {b})':<20}: vectorised {p_vec:.4f}, loop {p_loop:.4f}")
    sd_vec = float(np.std(result.distribution(a)))
    sd_loop = float(np.std(loop_samples[a]))
    print(f"  {f'resampled sd of {a}':<20}: vectorised {sd_vec:.4f}, loop {sd_loop:.4f}")


if __name__ == "__main__":
    main()
