"""`cppo-bench runs`: the stored runs of a run store, listed (shards of a run as that one run)
and merged. A --bench / --method filter that matches no stored run is an error naming what is
stored (a typo such as `--method dirct` must not read as "no runs yet")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cppo_bench.api.config import build_config, setting
from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import quote


@dataclass(frozen=True)
class RunsConfig:
    """Every setting of `cppo-bench runs` (list the stored runs)."""

    runs: str = setting("runs", "The run store to read.")
    bench: str | None = setting(None, "Only this benchmark.")
    method: str | None = setting(None, "Only this method.")


@dataclass(frozen=True)
class MergeConfig(RunsConfig):
    """Every setting of `cppo-bench runs merge`."""

    lock_wait: float = setting(
        0.0, "Seconds to wait for a run another process holds (else stop at once, naming it)."
    )


@dataclass(frozen=True)
class Merged:
    """What `merge_runs` did: (run directory, shards, records added) per merged run, and one
    line per run it could not merge (the others are still merged)."""

    merged: list[tuple[Path, int, int]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def list_runs(config: RunsConfig | None = None, **settings: Any) -> list[dict[str, Any]]:
    """One row per stored run (shards merged); an unreadable run is listed with the reason,
    not skipped, and so is what keeps a sharded run from merging."""
    from cppo_bench.store.index import scan

    c = config or build_config(RunsConfig, settings)
    bench, method = _canonical(c)
    store = scan(Path(c.runs))
    rows: list[dict[str, Any]] = [
        {"path": str(p), "status": f"unreadable: {why}"} for p, why in store.unreadable
    ]
    for run in store.runs:
        m = run.manifest
        if (bench and m.bench != bench) or (method and m.method != method):
            continue
        rows.append(_row(run))
    if (bench or method) and not any("bench" in r for r in rows):
        _unmatched(c, store.runs)
    return rows


def merge_runs(
    config: MergeConfig | None = None,
    *,
    advance: Callable[[int], None] | None = None,
    **settings: Any,
) -> Merged:
    """Merge the shards of every sharded run of the store into the run's own directory; each
    run is checked first (every shard present, same manifest apart from the shard, no problem
    missing or in two shards). `advance(1)` after each run (a progress bar)."""
    from cppo_bench.store.index import scan
    from cppo_bench.store.merge import merge_run

    c = config or build_config(MergeConfig, settings)
    bench, method = _canonical(c)
    store = scan(Path(c.runs))
    todo = [r for r in store.runs if r.shards
            and (bench is None or r.manifest.bench == bench)
            and (method is None or r.manifest.method == method)]  # fmt: skip
    if not todo and (bench or method):
        _unmatched(c, store.runs)
    done = Merged()
    for run in todo:
        try:
            added = merge_run(run, Path(c.runs), c.lock_wait)
        except DataError as exc:
            done.failed.append(str(exc))
        else:
            done.merged.append((run.path, len(run.shards), added))
        if advance is not None:
            advance(1)
    return done


def _canonical(c: RunsConfig) -> tuple[str | None, str | None]:
    """An alias (livecodebench, plan-and-solve) finds the runs stored under the one name."""
    from cppo_bench.api.names import registry

    bench = registry("benchmark").canonical(c.bench) if c.bench else c.bench
    method = registry("method").canonical(c.method) if c.method else c.method
    return bench, method


def _row(run: Any) -> dict[str, Any]:
    from cppo_bench.metrics.uncertainty import is_partial
    from cppo_bench.plan.validity import run_tally
    from cppo_bench.store.summary import summarize

    m = run.manifest
    try:
        records = run.records()
    except DataError as exc:
        return {"path": str(run.path), "status": f"unreadable: {exc}"}
    s = summarize(list(records.values()), m.k)
    tally = run_tally(records.values())
    total = max(len(m.problem_ids), m.selected)
    done = len(records)
    status = "complete" if done >= total and not run.problems else "incomplete"
    if status == "complete" and is_partial(done, m.dataset_size):
        # the run finished what it was asked (--limit/--shard), not the benchmark: stats and
        # report call this partial, and so does the listing
        status = f"partial: {done}/{m.dataset_size} of the benchmark"
    if run.skipped:  # beside the numbers: they leave these lines out (named as warnings)
        status += f", {len(run.skipped)} bad line(s) skipped"
    row: dict[str, Any] = {
        "path": str(run.path),
        "bench": m.bench,
        "method": m.method,
        "model": m.model,
        "k": m.k,
        "seed": m.seed,
        "done": done,
        "total": total,
        "pass_at_k": s["pass_at_k"],
        "maj_at_k": s["maj_at_k"],
        "status": status,
        "created_at": m.created_at,
        "validity": tally.to_dict(),
        "validity_text": tally.text(),
        "skipped": list(run.skipped),
    }
    if isinstance(m.extra.get("rejudged"), dict):
        row["rejudged_from"] = str(m.extra["rejudged"].get("from"))
    if run.shards:
        row["shards"] = [str(p) for p, _ in run.shards]
        row["problems"] = list(run.problems)
    return row


def _unmatched(c: RunsConfig, stored_runs: list[Any]) -> None:
    from cppo_bench.api.names import registry

    parts = []
    for flag, value, attr, kind in (("--bench", c.bench, "bench", "benchmark"),
                                    ("--method", c.method, "method", "method")):  # fmt: skip
        if value is None:
            continue
        stored = sorted({getattr(r.manifest, attr) for r in stored_runs})
        if value not in stored:
            known = registry(kind).names()
            hint = "" if value in known else f" (not a known {attr}: {', '.join(known)})"
            parts.append(
                f"{flag} {quote(value)} matches no stored run{hint}; stored: "
                f"{', '.join(stored) or 'none'}"
            )
    if not parts:
        parts.append(
            f"no stored run has both --bench {quote(c.bench)} and --method {quote(c.method)}"
        )
    raise DataError(f"under {c.runs}: " + "; ".join(parts))
