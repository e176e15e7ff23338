"""The harness's own overhead per problem against the backend's raw generate time.

    python benchmarks/run_overhead.py [--backend hf --model ID --method cppo --limit 4
                                       --k 4 --max-tokens 64]

One fresh `cppo-bench run` (nothing cached) is timed from the inside: time spent in the
backend's generate (raw generation), and the harness's own time split into
  prompting  the method outside generation: prompt rendering, plan parsing, seeds, progress
  cache      cache keys, lookups and appends around each generate call
  verify     the verifier (program execution on the hidden tests)
  store      record and manifest writes
  other      problem selection (--limit/--shard), opening/resuming the run directory
A second, cached pass of the same run then measures the resume path, where generation is
replaced by cache lookups. `--backend instant` swaps in a backend that answers without a
model (each problem's reference solution), to measure the harness at a larger scale (its
ratio to generation is then meaningless; read the milliseconds), and `--delay-ms D` makes
it sleep D ms per generation, a GPU's pace that leaves the CPU to the verifier.

Target: harness + verifier under 5% of raw generate time on a real model (exit 1 if not).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a clone, installed or not

from cppo_bench.backends.base import GenRequest, GenResult, SamplingParams  # noqa: E402
from cppo_bench.runner.pipeline import EvalSpec, execute, load_problems  # noqa: E402
from cppo_bench.store.runs import parse_shard  # noqa: E402


class InstantBackend:
    """No model: replies with the problem's reference program (so verification runs)."""

    name = "instant"
    model_id = "instant"

    def __init__(self, problems: Sequence, delay_ms: float = 0.0) -> None:
        self.refs = {p.statement.strip(): p.reference_solutions[0] for p in problems}
        self.delay_s = delay_ms / 1000  # per generation: an idle CPU, like a GPU generating

    def generate(self, requests: Sequence[GenRequest], progress=None) -> list[GenResult]:
        out = []
        for r in requests:
            text = r.messages[-1]["content"] if r.messages else (r.prompt or "")
            ref = next((c for s, c in self.refs.items() if s in text), "")
            reply = "Method 1: scan.\nMethod 2: sort.\nMethod 3: dp.\nMethod 4: bfs."
            if r.tag != "planner":
                reply = f"```python\n{ref}\n```"
            out.append(GenResult(reply, len(reply.split()), "stop"))
        time.sleep(self.delay_s * len(requests))
        return out

    def close(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="hf", help="hf | vllm | openai | instant")
    ap.add_argument("--model", default=None)
    ap.add_argument("--method", default="cppo")
    ap.add_argument("--bench", default="demo")
    ap.add_argument("--data", default=None)
    ap.add_argument("--limit", type=int, default=4)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--chunk-size", type=int, default=16)

    ap.add_argument("--shard", default=None, help="I/N: time a shard run instead")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="instant: sleep per generation")
    args = ap.parse_args()

    # the whole dataset, as `cppo-bench run` loads it: --limit/--shard select inside the run
    dataset = load_problems(args.bench, args.data, None, {}).problems
    problems = dataset[: args.limit]
    t0 = time.perf_counter()
    if args.backend == "instant":
        backend, label = InstantBackend(problems, args.delay_ms), "instant"
    else:
        from cppo_bench.backends import BACKENDS

        backend = BACKENDS.get(args.backend)(args.model)
        label = args.model or backend.model_id
    load_s = time.perf_counter() - t0
    spec = EvalSpec(
        method=args.method,
        bench=args.bench,
        model=label,
        backend=args.backend,
        k=args.k,
        sampling=SamplingParams(max_tokens=args.max_tokens),
        chunk_size=args.chunk_size,
        limit=args.limit,
        shard=parse_shard(args.shard) if args.shard else None,
    )
    with tempfile.TemporaryDirectory() as out:
        fresh = execute(spec, dataset, backend, Path(out))
        start = time.perf_counter()
        cached = execute(spec, dataset, backend, Path(out))  # all records present: no-op
        resume_s = time.perf_counter() - start
        for rec in Path(out).rglob("records.jsonl"):
            rec.unlink()  # drop the records, keep the generation cache: re-verify path
        start = time.perf_counter()
        replay = execute(spec, dataset, backend, Path(out))
        replay_s = time.perf_counter() - start
    backend.close()

    n = max(1, len(fresh.records))
    t, st = fresh.timings, fresh.stats
    gen = st.generate_s
    split = {
        "prompting": t.method_s - gen - st.cache_s,
        "cache": st.cache_s,
        "verify": t.verify_s,
        "store": t.store_s,
    }
    on_clock = t.total_s - t.load_s - gen  # the harness's own wall time, verifier included
    split["other"] = on_clock - (sum(split.values()) - t.hidden_s)
    split["overlapped with generation"] = -t.hidden_s
    print(f"backend {args.backend} ({label}), model load {load_s:.1f} s")
    print(
        f"run: {args.method} on {n} {args.bench} problems, K={args.k}, chunk {args.chunk_size}, "
        f"max_tokens={args.max_tokens}; {st.misses} generations, {st.generated_tokens} tokens"
    )
    print(f"{'per problem':<32}{'ms':>10}{'% of generate':>16}")
    print(f"{'raw generate (backend)':<32}{1000 * gen / n:>10.1f}{'':>16}")
    for name, secs in split.items():
        share = f"{100 * secs / gen:.3f}" if gen > 0 else "-"
        print(f"{'  ' + name:<32}{1000 * secs / n:>10.2f}{share:>16}")
    pct = 100 * on_clock / gen if gen > 0 else float("nan")
    print(f"{'harness incl. verifier':<32}{1000 * on_clock / n:>10.2f}{pct:>16.3f}")
    print(
        f"resume of the complete run: {1000 * resume_s:.1f} ms total "
        f"({cached.new} problems recomputed, {cached.stats.misses} generations)"
    )
    print(
        f"re-verify from the cache: {1000 * replay_s:.1f} ms total, "
        f"{replay.stats.misses} generations, verifier {1000 * replay.timings.verify_s:.1f} ms"
    )
    sys.stdout.flush()
    if replay.stats.misses:
        sys.exit("error: the cached replay regenerated something")
    if (args.backend != "instant" or args.delay_ms) and gen > 0 and pct >= 5.0:
        sys.exit(f"error: harness incl. verifier is {pct:.2f} % of raw generate (target < 5 %)")


if __name__ == "__main__":
    main()
