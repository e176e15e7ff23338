"""What a data-loading command says about its input: how many records it read, how many it
kept, and why it dropped the rest (a loader option's filter, malformed records, duplicates,
overlap with evaluation data). Every command that loads data prints this line, so a
training set that lost 3 of 5 rows to a default filter says so."""

from __future__ import annotations

from collections.abc import Mapping

from cppo_bench.problem import LoadResult


def dropped_reasons(result: LoadResult) -> dict[str, int]:
    """reason -> count: the loader's filters, then malformed / duplicate records."""
    reasons = dict(result.dropped)
    duplicates = sum("duplicate" in e.reason for e in result.errors)
    malformed = len(result.errors) - duplicates
    if malformed:
        first = next(e for e in result.errors if "duplicate" not in e.reason)
        reasons[f"malformed (first: record {first.record_id}: {first.reason})"] = malformed
    if duplicates:
        reasons["duplicate problem id"] = duplicates
    return reasons


def load_line(
    label: str,
    result: LoadResult,
    *,
    kept: int | None = None,
    extra: Mapping[str, int] | None = None,
) -> str:
    """'apps (data/apps): read 5 records, kept 1; dropped 4: 3 difficulty is not
    introductory (-o difficulty=all keeps them), 1 malformed (...)'. `kept` and `extra`
    account for a later step (--limit, overlap) that keeps fewer than the loader did."""
    reasons = dropped_reasons(result)
    read = len(result.problems) + sum(reasons.values())
    reasons.update(extra or {})
    kept = len(result.problems) if kept is None else kept
    where = f" ({result.source})" if result.source and result.source not in label else ""
    line = f"{label}{where}: read {read} records, kept {kept}"
    if reasons:
        line += f"; dropped {sum(reasons.values())}: " + ", ".join(
            f"{n} {why}" for why, n in reasons.items()
        )
    return line
