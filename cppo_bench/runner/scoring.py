"""Scoring a chunk of method outputs into ProblemRecords: code problems through the
sandboxed verifier (one parallel batch per chunk), answer-prediction problems by comparing
canonical answers with the label (and maj@K over the K answers)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cppo_bench.errors import DataError
from cppo_bench.methods import MethodOutput
from cppo_bench.problem import Problem
from cppo_bench.store.runs import Branch, ProblemRecord
from cppo_bench.store.summary import summarize  # noqa: F401  (the pipeline's scoring step)

DETAIL_CHARS = 300  # verifier detail kept per branch (tracebacks can be long)


def _verify_codegen(
    problems: Sequence[Problem], outputs: Sequence[MethodOutput], workers: int | None
) -> list[list[Branch]]:
    from cppo_bench.verifier import VerifyJob, verify_batch

    jobs = [
        VerifyJob(p, a.completion)
        for p, o in zip(problems, outputs, strict=True)
        for a in o.attempts
    ]
    results = iter(verify_batch(jobs, workers=workers))
    branches = []
    for o in outputs:
        row = []
        for i, a in enumerate(o.attempts):
            r = next(results)
            row.append(
                Branch(
                    index=i,
                    code=r.code or "",
                    completion=a.completion,
                    verdict=r.verdict,
                    passed=bool(r.passed),
                    tests_passed=r.tests_passed,
                    tests_total=r.tests_total,
                    time_s=round(float(r.time_s), 4),
                    solver_tokens=a.tokens,
                    plan=a.plan,
                    tuple_index=a.tuple_index,
                    finish_reason=a.finish_reason,
                    seed=a.seed,
                    first_failed=r.first_failed,
                    detail=(r.detail or "")[:DETAIL_CHARS],
                )
            )
        branches.append(row)
    return branches


def _score_answers(
    problems: Sequence[Problem], outputs: Sequence[MethodOutput], workers: int | None
) -> list[list[Branch]]:
    from cppo_bench.methods.output_prediction import canonical_answer

    rows = []
    for p, o in zip(problems, outputs, strict=True):
        if p.label is None:
            raise DataError(f"{p.uid}: a {p.task} problem without a label cannot be scored")
        label = canonical_answer(p.label)
        row = []
        for i, a in enumerate(o.attempts):
            answer = canonical_answer(a.answer)
            ok = answer is not None and answer == label
            verdict = "EMPTY" if answer is None else ("AC" if ok else "WA")
            row.append(
                Branch(
                    index=i,
                    code="",
                    completion=a.completion,
                    verdict=verdict,
                    passed=ok,
                    solver_tokens=a.tokens,
                    finish_reason=a.finish_reason,
                    seed=a.seed,
                    answer=answer,
                )
            )
        rows.append(row)
    return rows


def problem_meta(p: Problem) -> dict[str, str]:
    """What a record keeps of its problem for grouping and windows (stats --by difficulty,
    --start-date, as LiveCodeBench reports): difficulty, platform, contest date, if known."""
    meta = {
        "difficulty": p.difficulty,
        "platform": p.source.platform,
        "contest_date": p.source.contest_date,
    }
    return {k: str(v) for k, v in meta.items() if v}


# Problem.task -> how its branches are scored
SCORERS: dict[str, Callable[..., list[list[Branch]]]] = {
    "codegen": _verify_codegen,
    "execution": _score_answers,
    "output_prediction": _score_answers,
}


def score_chunk(
    problems: Sequence[Problem],
    outputs: Sequence[MethodOutput],
    k: int,
    workers: int | None = None,
) -> list[ProblemRecord]:
    """Verify (or answer-check) every branch of a chunk in one batch per task kind."""
    for p, o in zip(problems, outputs, strict=True):
        if o.problem_id != p.problem_id or len(o.attempts) != k:
            raise RuntimeError(
                f"{p.uid}: method returned {len(o.attempts)} attempts for {o.problem_id}, not {k}"
            )
    by_task: dict[str, list[int]] = {}
    for i, p in enumerate(problems):
        by_task.setdefault(p.task, []).append(i)
    branches: dict[int, list[Branch]] = {}
    for task, idx in by_task.items():
        rows = SCORERS[task]([problems[i] for i in idx], [outputs[i] for i in idx], workers)
        branches.update(zip(idx, rows, strict=True))
    records = []
    for i, (p, o) in enumerate(zip(problems, outputs, strict=True)):
        rec = ProblemRecord(
            problem_id=p.problem_id,
            branches=branches[i],
            planner_tokens=o.planner_tokens,
            solver_tokens=o.solver_tokens,
            plans=o.plans,
            plan_validity=o.plan_validity,
            label=p.label,
            extra={**problem_meta(p), **dict(o.extra)},
        )
        if p.task != "codegen":
            from cppo_bench.methods.output_prediction import canonical_answer
            from cppo_bench.metrics import maj_at_k

            answers = [a.answer for a in o.attempts]
            # (no label, nothing to match: a loader gives answer tasks one)
            label = p.label
            rec.extra["maj_at_k"] = label is not None and maj_at_k(
                answers, label, k, canonical_answer
            )
        records.append(rec)
    return records
