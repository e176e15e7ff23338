"""One problem, start to end: candidates, the oracle's runs, the record stored."""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from typing import Any

from cppo_bench.augment.execute import ExecJob, run_batch
from cppo_bench.augment.mutate_call import call_candidates
from cppo_bench.augment.mutate_stdin import stdin_candidates
from cppo_bench.augment.oracle import (
    MIN_REFERENCES,
    distinct_references,
    judge_candidates,
    passes_original,
)
from cppo_bench.problem import Problem
from cppo_bench.verifier import Limits

OVERSAMPLE = 3  # candidates per wanted test: the oracle rejects some
MAX_ROUNDS = 3  # batches of references tried for an oracle


@dataclass(frozen=True)
class Settings:
    per_problem: int = 10
    seed: int = 0
    references: int = 3  # distinct references run as the oracle
    workers: int = 1
    limits: Limits = Limits()
    oracle: str = "references"  # or "model": references written by a model


def problem_seed(seed: int, problem: Problem) -> int:
    """The problem's own seed: the same whatever order or subset problems come in."""
    digest = hashlib.sha256(f"{seed}:{problem.uid}".encode()).hexdigest()
    return int(digest[:16], 16)


def candidates_for(problem: Problem, n: int, seed: int) -> list:
    rng = random.Random(seed)
    inputs = [t.input for t in problem.tests]
    if problem.tests[0].mode == "call":
        return call_candidates(inputs, n, rng)
    return stdin_candidates(inputs, n, rng)


def augment_problem(problem: Problem, settings: Settings) -> dict[str, Any]:
    """The stored record for one problem (see cppo_bench.augment.store)."""
    start = time.perf_counter()
    seed = problem_seed(settings.seed, problem)
    record: dict[str, Any] = {
        "problem_id": problem.problem_id,
        "oracle": settings.oracle,
        "seed": seed,
        "tests": [],
    }

    def done(status: str, reason: str = "", **extra: Any) -> dict[str, Any]:
        record.update(status=status, reason=reason, seconds=round(time.perf_counter() - start, 3))
        record.update(extra)
        return record

    if problem.task != "codegen" or not problem.tests or len(problem.modes) != 1:
        return done("skipped", "not a program-writing problem with one kind of test")
    every = distinct_references(problem, len(problem.reference_solutions))
    if len(every) < MIN_REFERENCES:
        return done("skipped", f"fewer than {MIN_REFERENCES} distinct reference solutions "
                    f"({len(every)})")  # fmt: skip
    cands = candidates_for(problem, OVERSAMPLE * settings.per_problem, seed)
    if not cands:
        return done("skipped", "no candidate input could be made from the tests")
    originals = tuple(t.input for t in problem.tests)
    n_orig = len(originals)
    oracle: dict[int, list] = {}
    dropped: dict[str, str] = {}
    tried: list[int] = []
    # references in dataset order, a batch at a time, until `references` of them pass the
    # original tests (some APPS references do not) or MAX_ROUNDS batches were tried
    for _ in range(MAX_ROUNDS):
        need = settings.references - len(oracle)
        batch = every[len(tried) : len(tried) + need]
        if need <= 0 or not batch:
            break
        tried += batch
        jobs = [ExecJob(problem, problem.reference_solutions[r],
                        originals + tuple(c.input for c in cands)) for r in batch]  # fmt: skip
        results = run_batch(jobs, workers=settings.workers, limits=settings.limits)
        for r, outcomes in zip(batch, results, strict=True):
            why = passes_original(problem, outcomes[:n_orig])
            if why:
                dropped[str(r)] = why
            else:
                oracle[r] = outcomes[n_orig:]
    refs = tried
    if settings.oracle == "model":  # the oracle's programs are part of how the tests were made
        record["model_references"] = [problem.reference_solutions[r] for r in sorted(oracle)]
    if len(oracle) < MIN_REFERENCES:
        return done("skipped", f"fewer than {MIN_REFERENCES} references pass the original "
                    "tests", references=refs, dropped_references=dropped)  # fmt: skip
    verdict = judge_candidates(problem, cands, oracle)
    fn_name = problem.fn_name
    mode = problem.tests[0].mode
    kept = verdict.kept[: settings.per_problem]
    kept_inputs = {c.input for c, _ in kept}
    record["tests"] = [
        {
            "input": c.input,
            "output": out,
            "mode": mode,
            "fn_name": fn_name,
            "how": dict(c.how, seed=seed),
        }  # fmt: skip
        for c, out in kept
    ]
    disagreements = [
        {"reference": d["reference"], "input": cands[d["candidate"]].input[:2000]}
        for d in verdict.disagreements
        if cands[d["candidate"]].input in kept_inputs
    ]
    return done(
        "augmented" if kept else "none_kept",
        "" if kept else "the oracle kept no candidate",
        references=sorted(oracle),
        dropped_references=dropped,
        candidates=len(cands),
        rejected=dict(verdict.rejected),
        disagreements=disagreements,
    )
