"""Stage 1 data: the over-generate-then-filter funnel that builds the planner SFT set.

For each training problem the base planner proposes ``n_candidates`` methods (prompt
``sft_candidates``), ``samples`` times; the judge keeps admissible candidates one by one; near
duplicates of an already kept candidate are dropped; a problem enters the SFT set only with
>= K survivors, and its SFT target is the first K written in the PLAN contract's format.
The counts at every step go to the stage manifest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from trainers.cppo_pipeline.judge import Judge, PlanItem, near_duplicate
from trainers.harness import (
    Backend,
    GenRequest,
    Problem,
    SamplingParams,
    format_plans,
    load_prompt,
    parse_plans,
    render,
)

CANDIDATES_PROMPT = "sft_candidates"
PLAN_PROMPT = "plan"


@dataclass(frozen=True)
class SFTExample:
    problem: Problem
    methods: tuple[str, ...]  # the selected K

    @property
    def target(self) -> str:
        return format_plans(self.methods)


@dataclass
class FunnelCounts:
    problems_in: int = 0
    candidates: int = 0
    seed_candidates: int = 0  # of which from a seed file (demo stand-in for a capable planner)
    admissible: int = 0
    kept: int = 0  # admissible and not a duplicate
    sft_size: int = 0
    judge: str = ""
    rejected_reasons: dict[str, int] = field(default_factory=dict)
    # every candidate with its verdict: what the funnel saw, for audit and debugging
    records: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("records")
        return d


def candidate_requests(
    problems: Sequence[Problem], n: int, samples: int, params: SamplingParams, version: str = "v1"
) -> list[GenRequest]:
    stop = load_prompt(CANDIDATES_PROMPT, version).render_stop(n=n, n_next=n + 1)
    return [
        GenRequest(
            SamplingParams(**{**params.to_dict(), "stop": stop, "seed": params.seed + s}),
            messages=render(CANDIDATES_PROMPT, p, version, n=n, n_next=n + 1),
            tag="sft-candidates",
        )
        for p in problems
        for s in range(samples)
    ]


def select(
    problem: Problem,
    candidates: Sequence[str],
    judge: Judge,
    k: int,
    counts: FunnelCounts,
    origin: Sequence[str] | None = None,
) -> SFTExample | None:
    """Judge each candidate alone, drop near duplicates, keep the problem with >= k left."""
    verdicts = judge([PlanItem(problem, (c,), 1) for c in candidates])
    kept: list[str] = []
    origin = origin or ["model"] * len(candidates)
    for cand, v, src in zip(candidates, verdicts, origin, strict=True):
        counts.candidates += 1
        counts.records.append(
            {
                "problem_id": problem.problem_id,
                "origin": src,
                "candidate": cand,
                "admissible": v.valid,
                "judge": v.judge,
                "reasons": list(v.reasons),
            }
        )
        if not v.valid:
            for r in v.reasons:
                key = r.split(" ")[0]
                counts.rejected_reasons[key] = counts.rejected_reasons.get(key, 0) + 1
            continue
        counts.admissible += 1
        if any(near_duplicate(cand, k_) for k_ in kept):
            counts.rejected_reasons["near_duplicate"] = (
                counts.rejected_reasons.get("near_duplicate", 0) + 1
            )
            continue
        kept.append(cand)
    counts.kept += len(kept)
    return SFTExample(problem, tuple(kept[:k])) if len(kept) >= k else None


def run_funnel(
    problems: Sequence[Problem],
    backend: Backend,
    judge: Judge,
    *,
    k: int = 4,
    n_candidates: int = 6,
    samples: int = 1,
    params: SamplingParams | None = None,
    seeds: dict[str, list[str]] | None = None,
    version: str = "",
) -> tuple[list[SFTExample], FunnelCounts]:
    """``seeds``: extra candidates per problem id, judged like the model's own (the CPU demo's
    stand-in for a base planner able to follow the candidate prompt). ``version``: the run's
    prompt version; "" keeps the candidate prompt this funnel has always used (v1)."""
    params = params or SamplingParams(temperature=0.8, top_p=0.95, max_tokens=400)
    reqs = candidate_requests(problems, n_candidates, samples, params, version or "v1")
    results = backend.generate(reqs)
    counts = FunnelCounts(problems_in=len(problems), judge=judge.name)
    out = []
    for i, p in enumerate(problems):
        texts = [r.text for r in results[i * samples : (i + 1) * samples]]
        cands = [c for t in texts for c in parse_plans(t).plans if c.strip()]
        extra = list((seeds or {}).get(p.problem_id, []))
        counts.seed_candidates += len(extra)
        origin = ["model"] * len(cands) + ["seed"] * len(extra)
        ex = select(p, cands + extra, judge, k, counts, origin)
        if ex is not None:
            out.append(ex)
    counts.sft_size = len(out)
    return out, counts
