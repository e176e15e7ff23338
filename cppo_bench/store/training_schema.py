"""The files a training run writes, described once: the trainers write them, the report reads
exactly this (the harness owns the schema; trainers import it, never the reverse).

Every training run, and every stage of a CPPO pipeline, is one folder holding:

    train_manifest.json  {kind: "training", algorithm, config, base_model, seed, data, ...};
                         a CPPO stage adds {stage, status: running|complete|stopped, artifacts,
                         outputs: {name: path}, consumed: {stage/name: {path, manifest_sha256}},
                         summary}
    metrics.jsonl        one JSON object per step: {"step": int, "time": float, <metric>: number}
    checkpoints/, state/ artifacts of the one checkpoint format (trainers.engine.artifacts)

A CPPO pipeline folder holds one such folder per stage (``STAGES``); its reward-model stage adds
``val_scores.jsonl`` and the joint stage ``gate_log.jsonl``: one ``GateRecord`` per line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.store import schema as sch

TAU = 0.17  # the study's gate threshold J = 1{p >= tau} (low: a false veto zeroes a good plan)
TRAIN_MANIFEST = "train_manifest.json"
METRICS = "metrics.jsonl"
GATE_LOG = "gate_log.jsonl"
VAL_SCORES = "val_scores.jsonl"
STAGES = ("sft", "rm", "warmup", "audit", "joint")  # the CPPO pipeline, in order
MAX_FILE_BYTES = 256 << 20  # a training log past this is not one this toolkit wrote

# The training manifest in the one schema registry of stored documents (cppo_bench.store.schema):
# the fields every reader relies on are checked; any other field is recorded context.
TRAINING_MANIFEST = sch.SCHEMAS.register("training_manifest")(
    sch.Schema(
        "training_manifest",
        {
            "kind": sch.one_of("training"),
            "algorithm": sch.name,
            "stage": sch.name,  # a CPPO stage (STAGES) or a stage of another pipeline
            "status": sch.one_of("running", "complete", "stopped"),
            "base_model": sch.name,
            "model_path": sch.optional(sch.text),
            "seed": sch.integer(),
            "total_steps": sch.integer(0),
            "resumed_at_steps": sch.list_of(sch.integer(0)),
            "config": sch.mapping,
            "stage_config": sch.mapping,
            "data": sch.mapping,
            "artifacts": sch.list_of(sch.name),
            "outputs": sch.mapping,
            "consumed": sch.mapping,
            "summary": sch.mapping,
            # where the verifier reward ran (trainers/engine/rewards.verifier_mode)
            "reward_verified_by": sch.optional(sch.one_of("inprocess", "node pool", "service")),
        },
        optional=frozenset(
            {
                "algorithm",
                "stage",
                "status",
                "base_model",
                "model_path",
                "seed",
                "total_steps",
                "resumed_at_steps",
                "config",
                "stage_config",
                "data",
                "artifacts",
                "outputs",
                "consumed",
                "summary",
                "reward_verified_by",
            }
        ),  # fmt: skip
        open_ended=True,
    )
)


@dataclass(frozen=True)
class GateRecord:
    """One scored plan tuple: the gate's probability, and what is known of the tuple."""

    gate_prob: float  # in [0, 1]
    label: int | None = None  # 0/1 validity label (held-out annotation) -> ROC / AUC
    passed: bool | None = None  # the tuple reached pass@K -> heat map
    tau: float = TAU  # the gate threshold in force
    split: str | None = None  # "train" | "heldout"; the ROC uses heldout rows when any
    step: int | None = None


@dataclass(frozen=True)
class GateLog:
    name: str
    path: Path
    records: list[GateRecord]

    def roc_records(self) -> list[GateRecord]:
        labelled = [r for r in self.records if r.label is not None]
        held = [r for r in labelled if r.split == "heldout"]
        return held or labelled


def _number(value: object) -> TypeGuard[int | float]:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def gate_record(obj: object, where: str) -> GateRecord:
    """A ``GateRecord`` from one parsed JSON line, or a DataError naming ``where``."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object")
    p = obj.get("gate_prob")
    if not _number(p) or not 0.0 <= p <= 1.0:
        raise DataError(f"{where}: gate_prob must be a number in [0, 1]")
    label = obj.get("label")
    if label is not None and (isinstance(label, bool) or label not in (0, 1)):
        raise DataError(f"{where}: label must be 0 or 1")
    passed = obj.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise DataError(f"{where}: passed must be true or false")
    tau = obj.get("tau", TAU)
    if not _number(tau):
        raise DataError(f"{where}: tau must be a finite number")
    split, step = obj.get("split"), obj.get("step")
    return GateRecord(
        float(p),
        None if label is None else int(label),
        passed,
        float(tau),
        split if isinstance(split, str) else None,
        step if isinstance(step, int) and not isinstance(step, bool) else None,
    )


def _open(path: Path) -> Any:
    from cppo_bench.files import userfiles  # regular files only, size checked before reading

    return userfiles.open_bytes(path, 1 << 40)


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed object) of a JSONL file the trainers wrote; none if it is absent.
    Read through cppo_bench.files.jsonio (split on ``\\n`` only, bounded lines and nesting); a bad
    line is a DataError naming file:line."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    with _open(path) as fh:
        for line in jsonio.split_lines(fh, MAX_FILE_BYTES):
            if line.text is None:
                raise DataError(f"{path}:{line.lineno}: {line.error}")
            if line.text.strip():
                try:
                    rows.append((line.lineno, jsonio.loads(line.text)))
                except ValueError:
                    raise DataError(f"{path}:{line.lineno}: not JSON") from None
    return rows


def read_gate_log(paths: list[Path], name: str, where: Path) -> GateLog | None:
    records = [gate_record(obj, f"{p}:{n}") for p in paths for n, obj in read_jsonl(p)]
    return GateLog(name, where, records) if records else None


def read_metrics(folder: Path) -> list[dict[str, Any]]:
    """The per-step metrics of a training run or stage folder (objects with an int step)."""
    rows = []
    path = Path(folder) / METRICS
    for lineno, obj in read_jsonl(path):
        step = obj.get("step") if isinstance(obj, dict) else None
        if not isinstance(step, int) or isinstance(step, bool):
            raise DataError(f"{path}:{lineno}: a metrics line needs an integer step")
        rows.append(obj)
    return rows


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """A training (or CPPO stage) manifest, None when absent; a DataError when malformed."""
    path = Path(folder) / TRAIN_MANIFEST
    if not path.is_file():
        return None
    with _open(path) as fh:
        raw = jsonio.read_capped(fh, MAX_FILE_BYTES)
    if raw is None:
        raise DataError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB")
    try:
        data = jsonio.loads(raw)
    except ValueError:
        raise DataError(f"{path}: not JSON") from None
    why = TRAINING_MANIFEST.check(data)
    if why:
        raise DataError(f"{path}: not a training manifest ({why})")
    return data
