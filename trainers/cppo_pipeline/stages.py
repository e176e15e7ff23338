"""The stage runner: one folder per stage, skip what is complete, manifests name their inputs.

A stage writes ``DIR/<stage>/`` with its artifacts and ``stage_manifest.json``. The manifest is
written last and lists the artifacts the stage produced and those it consumed (path + sha256
of the producing stage's manifest), so a stage is complete exactly when its manifest says
``status: complete`` and every listed artifact exists; a complete stage is skipped on re-run,
an incomplete one is run again (it resumes from its own checkpoint when it has one).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST = "stage_manifest.json"
METRICS = "metrics.jsonl"
STAGES = ("sft", "rm", "warmup", "audit", "joint")


class PipelineStop(Exception):
    """A stage refused to continue (RM rejected, audit failed); the CLI exits non-zero."""

    def __init__(self, stage: str, message: str, revisit: str | None = None) -> None:
        self.stage, self.revisit = stage, revisit
        super().__init__(f"stage {stage}: {message}")


@dataclass
class StageContext:
    name: str
    folder: Path
    config: Mapping[str, Any]
    inputs: dict[str, Path]  # consumed stage name -> its folder
    consumed: dict[str, str] = field(default_factory=dict)  # artifact -> path (for the manifest)
    started: float = field(default_factory=time.monotonic)  # this run of the stage (wall time)

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        with (self.folder / METRICS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"step": step, "time": time.time(), **metrics}) + "\n")

    def use(self, stage: str, artifact: str) -> Path:
        """Path of an artifact of an earlier stage, recorded as consumed."""
        path = self.inputs[stage] / artifact
        if not path.exists():
            raise FileNotFoundError(f"stage {self.name} needs {path} (from stage {stage})")
        self.consumed[f"{stage}/{artifact}"] = str(path)
        return path


@dataclass(frozen=True)
class StageResult:
    artifacts: tuple[str, ...]  # paths relative to the stage folder
    summary: dict[str, Any] = field(default_factory=dict)


StageFn = Callable[[StageContext], StageResult]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None


def is_complete(folder: Path) -> bool:
    m = read_manifest(folder)
    return bool(
        m
        and m.get("status") == "complete"
        and all((folder / a).exists() for a in m.get("artifacts", []))
    )


def write_manifest(
    ctx: StageContext, status: str, result: StageResult | None, **extra: Any
) -> None:
    manifest = {
        "stage": ctx.name,
        "status": status,
        "artifacts": list(result.artifacts) if result else [],
        "consumed": {
            k: {"path": v, "manifest_sha256": _digest(Path(v).parent / MANIFEST)}
            for k, v in sorted(ctx.consumed.items())
        },
        "config": dict(ctx.config),
        "summary": result.summary if result else {},
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # this run only: a resumed stage counts from its resume
        "wall_seconds": round(time.monotonic() - ctx.started, 1),
        **extra,
    }
    tmp = ctx.folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str), encoding="utf-8")
    tmp.replace(ctx.folder / MANIFEST)


def run_stages(
    out: Path,
    stages: Mapping[str, StageFn],
    selected: Sequence[str],
    config: Mapping[str, Mapping[str, Any]],
    echo: Callable[[str], None] = print,
) -> dict[str, str]:
    """Run ``selected`` in pipeline order; returns stage -> "skipped" | "ran".
    A ``PipelineStop`` is recorded in the stage's manifest (status "stopped") and re-raised."""
    unknown = [s for s in selected if s not in stages]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; known: {', '.join(stages)}")
    done: dict[str, str] = {}
    for name in [s for s in stages if s in selected]:
        folder = out / name
        if is_complete(folder):
            echo(f"[{name}] complete, skipped")
            done[name] = "skipped"
            continue
        folder.mkdir(parents=True, exist_ok=True)
        inputs = {s: out / s for s in stages}
        ctx = StageContext(name, folder, config.get(name, {}), inputs)
        echo(f"[{name}] running")
        try:
            result = stages[name](ctx)
        except PipelineStop as stop:
            write_manifest(ctx, "stopped", None, error=str(stop), revisit=stop.revisit)
            raise
        write_manifest(ctx, "complete", result)
        done[name] = "ran"
    return done
