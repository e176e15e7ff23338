"""RM refresh between joint-CPPO phases (study "Refresh schedule").

Fresh planner outputs are labelled by the same judge, appended to the RM's pool, rebalanced by
prompt and label, and fine-tuning resumes from the latest accepted checkpoint; the refreshed
model must pass the acceptance rule again or the pipeline stops (a phase never runs under an
unchecked gate). The result says how far the weights moved and what the metrics are now.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from trainers.core.gate_metrics import PREREGISTERED_RULE, AcceptanceRule
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.negatives import (
    LabelledTuple,
    balance,
    make_negatives,
    split_by_problem,
)
from trainers.engine.artifacts import atomic_write_text
from trainers.harness import read_jsonl


@dataclass(frozen=True)
class RefreshResult:
    folder: str
    tau: float
    metrics: dict[str, float]
    pool_size: int
    new_labels: int
    weight_change: float  # L2 norm of the parameter change
    val_scores: list[float]
    val_labels: list[int]


def _flat(rm: rmod.RewardModel) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).float().cpu() for p in rm.module.parameters()])


def refresh(
    previous: Path,
    out: Path,
    pool: Sequence[LabelledTuple],
    fresh: Sequence[LabelledTuple],
    cfg: rmod.RMConfig,
    rule: AcceptanceRule = PREREGISTERED_RULE,
    val_fraction: float = 0.25,
) -> tuple[RefreshResult, list[LabelledTuple]]:
    """Resume the RM at ``previous`` on pool + fresh labels (+ made negatives for the fresh
    positives); write the accepted model to ``out``. Raises ``RMRejected`` when it fails."""
    # the previous model passed its check when written; the refreshed one is checked below
    rm, _ = rmod.load(previous, rule=None)
    before = _flat(rm)
    positives = [t for t in fresh if t.label == 1]
    merged = [*pool, *fresh, *make_negatives(positives, seed=len(pool))]
    data = balance(merged, seed=len(pool))
    train, val = split_by_problem(data, val_fraction, seed=0)
    rmod.fit(rm, train, cfg)
    metrics, scores = rmod.evaluate(rm, val, cfg)
    rmod.accept(metrics, rule)
    rmod.save(rm, out, metrics, cfg, merged)
    result = RefreshResult(
        str(out),
        metrics.tau,
        metrics.as_dict(),
        len(merged),
        len(fresh),
        float(torch.linalg.vector_norm(_flat(rm) - before)),
        scores.tolist(),
        [t.label for t in val],
    )
    return result, merged


def result_dict(r: RefreshResult) -> dict[str, object]:
    return asdict(r)


# -- bookkeeping for a resumable joint stage ---------------------------------------------------
# A phase-boundary refresh runs after the engine has saved that step's state, so a SIGKILL
# during it resumes *after* the boundary. Hence: the step's tuples are kept on disk before the
# state is saved (trainers.algorithms.cppo ``write_recent``), a refresh counts as done only once its record is in the log
# (``record_refresh``, written last and atomically), and a resumed stage redoes a boundary whose
# record is missing.


def refresh_records(log: Path) -> list[dict[str, Any]]:
    """The refresh log's records (one per finished boundary, accepted or refused)."""
    return [obj for _, obj in read_jsonl(log) if isinstance(obj, dict)]


def record_refresh(log: Path, record: dict[str, object]) -> None:
    """Append ``record``; the whole log is rewritten atomically, so a kill leaves it whole."""
    lines = [json.dumps(r) for r in refresh_records(log) if r.get("step") != record.get("step")]
    atomic_write_text(log, "".join(line + "\n" for line in [*lines, json.dumps(record)]))
