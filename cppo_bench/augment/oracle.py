"""Which candidate inputs become tests: the problem's reference solutions are the oracle.

A reference is an oracle only if it passes the problem's original tests in the sandbox.
A candidate is kept only if no oracle reference fails on it (crash, time or memory limit:
the input is most likely outside the statement's constraints) and every oracle reference
(two at least) agrees on its output under the benchmark's own comparison rule. Unanimity,
not a majority: where references disagree the problem may accept several answers, or a
reference is wrong, and neither makes a test anyone should be judged by (`judge_candidates`
takes `quorum` for the looser rule; disagreements are then recorded).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cppo_bench.augment.execute import Outcome, agree
from cppo_bench.augment.mutate_stdin import Candidate
from cppo_bench.problem import Problem

MIN_REFERENCES = 2


@dataclass
class OracleVerdict:
    kept: list[tuple[Candidate, str]] = field(default_factory=list)  # (candidate, output)
    rejected: Counter = field(default_factory=Counter)  # reason -> count
    disagreements: list[dict] = field(default_factory=list)  # {reference, candidate}


def distinct_references(problem: Problem, limit: int) -> list[int]:
    """Indices of up to `limit` references with distinct text (a duplicate agrees with
    itself and proves nothing)."""
    seen: set[str] = set()
    out: list[int] = []
    for k, code in enumerate(problem.reference_solutions):
        key = "\n".join(line.rstrip() for line in code.strip().splitlines())
        if key and key not in seen:
            seen.add(key)
            out.append(k)
        if len(out) >= limit:
            break
    return out


def passes_original(problem: Problem, outcomes: Sequence[Outcome]) -> str:
    """ "" when these outcomes (one per original test) all pass; else why not."""
    for i, (test, o) in enumerate(zip(problem.tests, outcomes, strict=True)):
        if not o.ok:
            return f"original test {i}: {o.verdict} {o.detail[:80]}".strip()
        if not agree(problem, o.output or "", test.output):
            return f"original test {i}: wrong answer"
    return ""


def judge_candidates(
    problem: Problem,
    candidates: Sequence[Candidate],
    outcomes: Mapping[int, Sequence[Outcome]],  # reference index -> one outcome per candidate
    quorum: str = "all",  # or "majority": a strict majority of at least two
) -> OracleVerdict:
    verdict = OracleVerdict()
    refs = sorted(outcomes)
    for c, cand in enumerate(candidates):
        runs = {r: outcomes[r][c] for r in refs}
        failed = [o.verdict for o in runs.values() if not o.ok]
        if failed:
            verdict.rejected[f"a reference failed ({Counter(failed).most_common(1)[0][0]})"] += 1
            continue
        groups: list[list[int]] = []  # references grouped by agreeing output
        for r in refs:
            for g in groups:
                if agree(problem, runs[r].output or "", runs[g[0]].output or ""):
                    g.append(r)
                    break
            else:
                groups.append([r])
        groups.sort(key=len, reverse=True)
        top = groups[0]
        need = len(refs) if quorum == "all" else len(refs) // 2 + 1
        if len(top) < max(MIN_REFERENCES, need):
            verdict.rejected["references disagree"] += 1
            continue
        verdict.kept.append((cand, runs[top[0]].output or ""))
        for g in groups[1:]:
            for r in g:
                verdict.disagreements.append({"reference": r, "candidate": c})
    return verdict
