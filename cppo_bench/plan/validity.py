"""What a method really did: how many planner tuples were valid, filled, truncated or
repaired, and which other fallbacks fired (PlanSearch stages, skills, plan extraction).

A tuple method whose planner never follows the PLAN contract still produces K branches:
the fill rule completes every tuple, so the run is Direct Solve under another name. These
counts make that visible wherever a number is shown (the run summary, `runs`, `stats`,
the report cell), and `degraded` marks a run whose valid share is below a threshold.

Per tuple (one planner tuple's validity report, see cppo_bench.plan.contract.ValidityReport):

- valid: every rule of the PLAN contract holds as parsed (nothing filled, cut or
  repaired: the validity report's verdict, less the repaired tuples);
- filled: at least one slot was completed by the fill rule (cycle or generic plan);
- truncated: the planner's completion hit its token cap (finish reason "length");
- repaired: usable only after a repair: parsed by the numbered-list fallback parser, or
  surplus methods cut to the tuple size;
- failed: (--strict-plans) an invalid tuple whose branches were scored as failed.

Fallbacks (per problem, counted by the method in `record.extra["fallbacks"]`) are named
counters such as `plansearch_no_observations`. Counts are derived from what records hold,
so runs stored before these counters existed are tallied too (without fallbacks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A run is marked degraded when fewer than this share of its tuples were valid.
DEGRADED_BELOW = 0.5
DEGRADED_MARK = "‡"
TUPLE_KINDS = ("valid", "filled", "truncated", "repaired", "failed")


def tuple_flags(report: Mapping[str, Any], finish: str | None = None) -> dict[str, bool]:
    """The kinds (see module doc) one tuple's validity report and planner finish reason
    say it is."""
    k, count = int(report.get("k", 0) or 0), int(report.get("count", 0) or 0)
    repaired = report.get("parse_mode") == "numbered" or (k > 0 and count > k)
    return {
        # a repaired tuple may pass every rule once repaired; it still broke the contract
        "valid": bool(report.get("valid")) and not repaired,
        "filled": bool(report.get("filled")),
        "truncated": finish == "length",
        "repaired": repaired,
        "failed": bool(report.get("strict_failed")),
        # filled with the generic plan: no idea of the planner's in the slot (the generic
        # rule, or a cycle over nothing when no method parsed)
        "generic": bool(report.get("filled"))
        and (report.get("fill_rule") == "generic" or count == 0),
    }


@dataclass
class Tally:
    """Counts over the tuples (and fallbacks) of one or more problem records."""

    tuples: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    fallbacks: Counter[str] = field(default_factory=Counter)
    problems: int = 0

    def add(self, other: Tally) -> None:
        self.tuples += other.tuples
        self.counts.update(other.counts)
        self.fallbacks.update(other.fallbacks)
        self.problems += other.problems

    @property
    def valid(self) -> int:
        return self.counts["valid"]

    @property
    def valid_share(self) -> float | None:
        return self.valid / self.tuples if self.tuples else None

    def degraded(self, below: float = DEGRADED_BELOW) -> bool:
        """Fewer than `below` of the tuples valid, or a fallback on most problems."""
        share = self.valid_share
        if share is not None and share < below:
            return True
        return bool(self.problems) and any(
            n / self.problems > 1 - below for n in self.fallbacks.values()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "tuples": self.tuples,
            **{kind: self.counts[kind] for kind in (*TUPLE_KINDS, "generic")},
            "fallbacks": dict(sorted(self.fallbacks.items())),
            "degraded": self.degraded(),
        }

    def text(self) -> str:
        """One line: '0/2 tuples valid (2 filled, 0 truncated, 0 repaired)'; fallbacks
        follow; '' when there is nothing to say (a plan-less method without fallbacks)."""
        parts = []
        if self.tuples:
            c = self.counts
            filled = f"{c['filled']} filled"
            if c["generic"]:
                filled += f" ({c['generic']} with the generic plan)"
            detail = f"{filled}, {c['truncated']} truncated, {c['repaired']} repaired"
            if c["failed"]:
                detail += f", {c['failed']} failed (strict)"
            parts.append(f"{self.valid}/{self.tuples} tuples valid ({detail})")
        parts += [f"{name} on {n}/{self.problems} problems" for name, n in self.fallbacks.items()]
        text = "; ".join(parts)
        if text and self.degraded():
            text = f"DEGRADED {DEGRADED_MARK}: {text}"
        return text


def record_tally(record: Any) -> Tally:
    """The tally of one ProblemRecord (or anything with plan_validity and extra)."""
    extra = getattr(record, "extra", None) or {}
    finishes: Sequence[Any] = extra.get("planner_finish") or ()
    reports = [r for r in (getattr(record, "plan_validity", None) or []) if isinstance(r, dict)]
    tally = Tally(problems=1)
    for i, report in enumerate(reports):
        # iid draws: one tuple from k planner calls; it is truncated when any call was
        finish = finishes[i] if len(finishes) == len(reports) else None
        if len(reports) == 1 and len(finishes) > 1:
            finish = "length" if "length" in finishes else None
        tally.tuples += 1
        tally.counts.update(kind for kind, on in tuple_flags(report, finish).items() if on)
    fallbacks = extra.get("fallbacks") or {}
    if isinstance(fallbacks, dict):
        tally.fallbacks.update(
            {str(k): 1 for k, v in fallbacks.items() if isinstance(v, int) and v > 0}
        )
    return tally


def run_tally(records: Iterable[Any]) -> Tally:
    total = Tally()
    for record in records:
        total.add(record_tally(record))
    return total
