"""What `run` says about its results beyond the numbers the pipeline returns: the tests line,
the plan-validity line, the pass@K over seeds with the study's one uncertainty rule, and what
an interrupted run kept. Text, computed here; the CLI prints it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def tests_line(manifest: Any) -> str:
    """Where the run's tests came from ('' when the benchmark's own)."""
    from cppo_bench.benchmarks.testsource import manifest_line

    return manifest_line(manifest) or ""


def validity_text(records: list[Any]) -> str:
    """The tuple validity / fallback line of a run ('' for a method with nothing to say)."""
    from cppo_bench.plan.validity import run_tally

    return run_tally(records).text()


def seed_summary(results: list[Any]) -> str:
    """'pass@4 over seeds: 0.500 ± 0.102 (bootstrap SE, n=24, 3 seeds; seed 0: ...)': the
    number `stats passk` and `report` give for the same runs, by the same call
    (`cell_uncertainty`, the study's rule: sampling seeds of an untrained model are averaged
    per problem, bootstrap SE over problems; a trained checkpoint's seeds: std over them)."""
    import numpy as np

    from cppo_bench.metrics.table import OutcomeRow, row_scores
    from cppo_bench.metrics.uncertainty import cell_uncertainty

    k = results[0].manifest.k
    per_seed = ", ".join(f"seed {r.manifest.seed}: {_fmt(r.summary['pass_at_k'])}" for r in results)
    scores: list[dict[str, float]] = []
    for r in results:
        m = r.manifest
        rows = [OutcomeRow(m.bench, m.method, m.seed, rec.problem_id, outcomes=tuple(rec.outcomes))
                for rec in r.records]  # fmt: skip
        values = row_scores(rows, k, estimator="first", select="first") if rows else ()
        scores.append(dict(zip((x.problem_id for x in rows), map(float, values), strict=True)))
    shared = sorted(set.intersection(*(set(s) for s in scores))) if scores else []
    if not shared:
        return f"pass@{k} over seeds: - (no problem every seed recorded; {per_seed})"
    matrix = np.array([[s[p] for p in shared] for s in scores])
    trained = bool(results[0].manifest.extra.get("trained"))
    u = cell_uncertainty(matrix, trained, n_total=results[0].manifest.dataset_size or 0)
    return f"pass@{k} over seeds: {u} ({per_seed})"


@dataclass(frozen=True)
class Kept:
    """What an interrupted run kept: verified problems, finished generations, and the file
    those are cached in."""

    records: int
    generations: int
    cache_name: str


def kept(run_dir: Path) -> Kept:
    """Count what `run_dir` holds, through the store's readers (no link followed, a line at a
    time); an unreadable file counts as nothing kept."""
    from cppo_bench.files import fs as storefs
    from cppo_bench.files.jsonio import split_lines
    from cppo_bench.store.gencache import GEN_CACHE
    from cppo_bench.store.runs import read_records

    try:
        records = len(read_records(run_dir))
    except DataError:
        records = 0
    cache, gens = run_dir / GEN_CACHE, 0
    if cache.exists():
        try:
            with storefs.open_file(cache, "rb") as fh:
                gens = sum(1 for line in split_lines(fh) if not line.torn)
        except (OSError, DataError):
            gens = 0
    return Kept(records, gens, GEN_CACHE)
