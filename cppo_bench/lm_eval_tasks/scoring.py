"""Scoring of the cppo_* lm-eval tasks: one batched verification, then per-problem pass@k.

lm-eval applies a task's filters once, to every response of the task, before it calls
`process_results` one document at a time. So the filter is where the programs run: all
N x K of them in one `verify_batch` call (parallel, sandboxed, cached), and each
document's filtered response becomes the list of its K verdicts. `process_results` then
only counts. Keeping all K (lm-eval's default `take_first` filter would keep one) is what
makes pass@K computable at all.

Verifier knobs (lm-eval's filter hook passes none through, so they are read from the
environment): CPPO_BENCH_VERIFY_WORKERS (default: one per core) and
CPPO_BENCH_VERIFY_CACHE (a folder for the verdict cache, so re-scoring never re-executes).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.lm_eval_tasks.docs import problem_for
from cppo_bench.util.termsafe import quote, warn

log = logging.getLogger(__name__)

WORKERS_ENV = "CPPO_BENCH_VERIFY_WORKERS"
CACHE_ENV = "CPPO_BENCH_VERIFY_CACHE"

# What a verdict record keeps of a VerifyResult (the log of lm-eval's --log_samples).
VERDICT_FIELDS = ("verdict", "passed", "tests_passed", "tests_total", "first_failed", "time_s")


def _workers() -> int | None:
    from cppo_bench.util import env

    return env.optional_integer(WORKERS_ENV, 1, 4096)


def verify_responses(
    resps: Sequence[Sequence[str]], docs: Sequence[Mapping[str, Any]]
) -> list[list[str]]:
    """lm-eval filter: for each document, its K completions -> K verdict records (as JSON
    text: see below)."""
    from cppo_bench.methods.base import close_fence
    from cppo_bench.verifier import VerifyJob, verify_batch

    resps = [list(r) for r in resps]
    # lm-eval cuts a completion before its stop string (the closing fence), exactly as
    # cppo-bench's backends do; re-close it the way the direct method does before verifying.
    jobs = [
        VerifyJob(problem=problem_for(doc), code=close_fence(text))
        for doc, texts in zip(docs, resps, strict=True)
        for text in texts
    ]
    _warn_if_repeats_identical(resps)
    from cppo_bench.util import env

    results = verify_batch(jobs, workers=_workers(), cache_dir=env.path(CACHE_ENV), progress=True)
    # JSON text, not dicts: lm-eval's --log_samples writes non-string responses as Python
    # reprs, and the logged verdicts should be machine-readable.
    records = iter(
        json.dumps({**{f: getattr(r, f) for f in VERDICT_FIELDS}, "code": r.code}) for r in results
    )
    return [[next(records) for _ in texts] for texts in resps]


def _warn_if_repeats_identical(resps: Sequence[Sequence[str]]) -> None:
    """K identical completions everywhere mean pass@K silently equals pass@1: greedy
    decoding, or a backend that seeds every request identically (lm-eval clones one
    request K times, so a per-request seed repeats the same sample)."""
    multi = [r for r in resps if len(r) > 1]
    if multi and all(len(set(r)) == 1 for r in multi):
        warn(
            log,
            "cppo-bench: all %d repeats of every problem are identical; pass@K equals pass@1. "
            "Sample (do_sample: true, temperature > 0) without a fixed per-request seed.",
            len(multi[0]),
        )


def _verdicts(results: Sequence[Any]) -> list[Mapping[str, Any]]:
    verdicts: list[Mapping[str, Any]] = []
    for item in results:
        for record in item if isinstance(item, list | tuple) else [item]:
            try:
                verdict = json.loads(record) if isinstance(record, str) else record
            except json.JSONDecodeError:
                verdict = None
            if not isinstance(verdict, Mapping) or "passed" not in verdict:
                raise DataError(
                    "cppo task: process_results expects the verdicts of the 'verified' filter "
                    f"(hooks.verify_responses), got {quote(str(record)[:60])}; "
                    "keep the task's filter_list"
                )
            verdicts.append(verdict)
    return verdicts


_warned_k: set[tuple[int, int]] = set()


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """lm-eval process_results: unbiased pass@k for every k in the document's `pass_at`
    that the number of samples n allows (k <= n)."""
    from cppo_bench.metrics import pass_at_k

    verdicts = _verdicts(results)
    n = len(verdicts)
    c = sum(bool(v["passed"]) for v in verdicts)
    scores: dict[str, float] = {}
    for k in doc["pass_at"]:
        if k > n:
            if (k, n) not in _warned_k:
                _warned_k.add((k, n))
                warn(log, "cppo-bench: pass@%d needs >= %d samples, got %d: skipped", k, k, n)
            continue
        scores[f"pass@{k}"] = float(pass_at_k(n, c, k))
    return scores
