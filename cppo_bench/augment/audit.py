"""pass@K+ : a stored run's accepted programs judged again with stronger tests.

`audit_run` re-judges every AC branch of a run with the augmented tests (and, strict, with
every original test, no early stop) through `verify_batch`, and stores the outcome beside
the run (RUN/test_audits/<test-set hash>[-strict].json). `plus_rows` turns stored audits into the
pass@K / pass@K+ table: per method and benchmark, with a hierarchical bootstrap (problems
and seeds resampled) of the paired difference pass@K - pass@K+.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cppo_bench.augment.store import TestSet, with_tests
from cppo_bench.files import userfiles
from cppo_bench.files.fs import write_atomic
from cppo_bench.problem import Problem
from cppo_bench.store.runs import ProblemRecord, RunManifest
from cppo_bench.util.termsafe import warn

AUDIT_DIR = "test_audits"  # not "audit": a CPPO pipeline has a stage of that name
log = logging.getLogger(__name__)


def audit_path(run_dir: Path, ts_hash: str, strict: bool) -> Path:
    return Path(run_dir) / AUDIT_DIR / f"{ts_hash[:16]}{'-strict' if strict else ''}.json"


def audit_run(
    manifest: RunManifest,
    records: Sequence[ProblemRecord],
    problems: dict[str, Problem],
    ts: TestSet,
    *,
    strict: bool = False,
    workers: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """The audit document of one run (see module doc); problems absent from `problems`
    are left out and counted."""
    from cppo_bench.verifier import VerifyJob, verify_batch

    jobs, where = [], []
    missing = 0
    for rec in records:
        p = problems.get(rec.problem_id)
        if p is None:
            missing += 1
            continue
        extra = with_tests([p], ts, only_augmented=True)[0]
        has_extra = extra is not p
        for b in rec.branches:
            if not b.passed:
                continue
            if has_extra:
                jobs.append(VerifyJob(extra, b.code))
                where.append((rec.problem_id, b.index, "augmented", False))
            if strict:
                jobs.append(VerifyJob(p, b.code))
                where.append((rec.problem_id, b.index, "original", True))
    # every test runs (issue 36): its verdicts feed training data, and an early stop would
    # tell later programs whether test j ran
    results = verify_batch(jobs, workers=workers, progress=progress, all_tests=True) if jobs else []
    failed: dict[tuple[str, int], str] = {}
    for (pid, idx, what, _), r in zip(where, results, strict=True):
        if not r.passed:
            failed.setdefault((pid, idx), f"{what}: {r.verdict} {r.detail[:100]}".strip())
    per_problem: dict[str, dict[str, Any]] = {}
    for rec in records:
        if rec.problem_id not in problems:
            continue
        plus = [b.passed and (rec.problem_id, b.index) not in failed for b in rec.branches]
        per_problem[rec.problem_id] = {
            "pass": [b.passed for b in rec.branches],
            "pass_plus": plus,
            "augmented_tests": len(ts.tests_for(rec.problem_id)),
            "failed": {str(i): why for (pid, i), why in failed.items() if pid == rec.problem_id},
        }
    ok = [any(v["pass"]) for v in per_problem.values()]
    ok_plus = [any(v["pass_plus"]) for v in per_problem.values()]
    n = len(per_problem)
    return {
        "method": manifest.method, "bench": manifest.bench, "model": manifest.model,
        "k": manifest.k, "seed": manifest.seed, "trained": manifest.extra.get("trained"),
        "test_set": {"path": str(ts.path), "hash": ts.hash(), "tests": ts.n_tests(),
                     "oracle": ts.config.get("oracle")},
        "strict": strict, "problems_missing": missing,
        "programs_rejudged": len({(w[0], w[1]) for w in where}),
        "programs_failed": len(failed),
        "pass_at_k": sum(ok) / n if n else None,
        "pass_at_k_plus": sum(ok_plus) / n if n else None,
        "problems": per_problem,
    }  # fmt: skip


def store_audit(run_dir: Path, doc: dict[str, Any]) -> Path:
    path = audit_path(run_dir, doc["test_set"]["hash"], doc["strict"])
    write_atomic(path, json.dumps(doc, sort_keys=True) + "\n", root=run_dir)  # no link below
    return path


def read_audits(root: Path) -> list[dict[str, Any]]:
    """Every stored audit under a run store; a file that is not one is skipped (and logged)."""
    out = []
    for path in sorted(Path(root).rglob(f"{AUDIT_DIR}/*.json")):
        try:
            doc = userfiles.read_json(path, userfiles.MAX_SMALL)
        except ValueError:  # UserFileError too: a FIFO, device or oversized file
            doc = None
        if _is_audit(doc):
            out.append(doc)
        else:
            warn(log, "%s: not an audit written by cppo-bench audit; skipped", str(path))
    return out


def _is_audit(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("problems"), dict):
        return False
    keys = ("method", "bench", "model", "k", "strict", "test_set")
    if any(k not in doc for k in keys) or not isinstance(doc["test_set"], dict):
        return False
    return all(
        isinstance(v, dict)
        and isinstance(v.get("pass"), list)
        and isinstance(v.get("pass_plus"), list)
        and len(v["pass"]) == len(v["pass_plus"])
        for v in doc["problems"].values()
    )


@dataclass(frozen=True)
class PlusRow:
    bench: str
    method: str
    model: str
    k: int
    seeds: int
    problems: int
    pass_k: float
    pass_k_plus: float
    drop: float  # pass@K - pass@K+
    drop_ci: tuple[float, float]  # 95% hierarchical-bootstrap interval of the drop
    oracle: str


def plus_rows(
    audits: Sequence[dict[str, Any]], resamples: int = 1000, seed: int = 0
) -> list[PlusRow]:
    from cppo_bench.metrics.bootstrap import hierarchical_bootstrap

    groups: dict[tuple, list[dict]] = {}
    for a in audits:
        key = (a["bench"], a["method"], a["model"], a.get("trained"), a["k"], a["test_set"]["hash"],
               a["strict"])  # fmt: skip
        groups.setdefault(key, []).append(a)
    rows = []
    for (bench, method, model, trained, k, _, strict), docs in sorted(groups.items(), key=str):
        # the problems every seed covers, in one order: the bootstrap pairs them
        common = sorted(set.intersection(*(set(d["problems"]) for d in docs)))
        if not common:
            continue
        base = np.array([[any(d["problems"][p]["pass"]) for p in common] for d in docs], float)
        plus = np.array([[any(d["problems"][p]["pass_plus"]) for p in common] for d in docs],
                        float)  # fmt: skip
        boot = hierarchical_bootstrap({"drop": base - plus}, resamples=resamples, seed=seed)
        label = method + (f" ({trained})" if trained else "") + (" strict" if strict else "")
        oracle = str(docs[0]["test_set"].get("oracle") or "references")
        rows.append(PlusRow(bench, label, model, k, len(docs), len(common), float(base.mean()),
                            float(plus.mean()), float((base - plus).mean()),
                            boot.interval("drop"), oracle))  # fmt: skip
    return rows


def weakest(audits: Sequence[dict[str, Any]], limit: int = 10) -> list[tuple[str, str, int, int]]:
    """(bench, problem, accepted programs, of which the augmented tests reject): the problems
    whose original tests let the most wrong programs through."""
    tally: dict[tuple[str, str], list[int]] = {}
    for a in audits:
        for pid, v in a["problems"].items():
            t = tally.setdefault((a["bench"], pid), [0, 0])
            t[0] += sum(v["pass"])
            t[1] += sum(p and not q for p, q in zip(v["pass"], v["pass_plus"], strict=True))
    ranked = sorted(((b, p, n, f) for (b, p), (n, f) in tally.items() if f),
                    key=lambda r: (-r[3] / max(r[2], 1), -r[3], r[0], r[1]))  # fmt: skip
    return ranked[:limit]
