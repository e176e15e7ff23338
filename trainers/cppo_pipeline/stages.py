"""The stage runner: one folder per stage, skip what is complete, manifests name their inputs.

A stage writes ``DIR/<stage>/`` in the layout every training run has (cppo_bench.store.training_schema):
``train_manifest.json``, ``metrics.jsonl`` and its artifacts. The manifest is completed last:
``status``, the artifacts the stage produced, its ``outputs`` (e.g. the policy it hands on) and
what it consumed (path + sha256 of the producing stage's manifest). A stage is complete exactly
when its manifest says ``status: complete`` and every listed artifact exists; a complete stage
is skipped on re-run, an incomplete one is run again (resuming from its own state when it has
one). Warm-up and joint training are engine runs in the stage folder itself, so the engine's
manifest and metrics log are the stage's: one of each per stage.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.cppo_pipeline import ranks
from trainers.engine.artifacts import atomic_write_text
from trainers.engine.manifest import provenance
from trainers.engine.metrics import MetricsLog
from trainers.harness import STAGES, TRAIN_MANIFEST, DataError, OutDir, quote
from trainers.harness import read_manifest as read_training_manifest

MANIFEST = TRAIN_MANIFEST
__all__ = ["MANIFEST", "STAGES", "PipelineStop", "StageContext", "StageResult", "run_stages"]


class PipelineStop(Exception):
    """A stage refused to continue (RM rejected, audit failed); the CLI exits non-zero."""

    def __init__(self, stage: str, message: str, revisit: str | None = None) -> None:
        self.stage, self.revisit = stage, revisit
        super().__init__(f"stage {stage}: {message}")


@dataclass
class StageContext:
    name: str
    folder: Path
    config: Mapping[str, Any]  # what every stage's manifest records (settings, judge, model)
    inputs: dict[str, Path]  # stage name -> its folder
    consumed: dict[str, str] = field(default_factory=dict)  # artifact -> path (for the manifest)
    started: float = field(default_factory=time.monotonic)  # this run of the stage (wall time)
    progress: bool = False

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        MetricsLog(self.folder, True).write({"step": step, "time": time.time(), **metrics})

    def use(self, stage: str, artifact: str) -> Path:
        """Path of an artifact of an earlier stage, recorded as consumed."""
        path = self.inputs[stage] / artifact
        if not path.exists():
            raise PipelineStop(self.name, f"needs {path} (from stage {stage})", revisit=stage)
        self.consumed[f"{stage}/{artifact}"] = str(path)
        return path

    def output(self, stage: str, name: str) -> str:
        """A named output of an earlier, complete stage (e.g. its policy), recorded as consumed."""
        value = stage_output(self.inputs[stage], name)
        if value is None:
            raise PipelineStop(
                self.name, f"stage {stage} has no output {quote(name)}", revisit=stage
            )
        self.consumed[f"{stage}/{name}"] = str(self.inputs[stage] / MANIFEST)
        return value


@dataclass(frozen=True)
class StageResult:
    artifacts: tuple[str, ...]  # paths relative to the stage folder
    summary: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # name -> value handed to later stages


StageFn = Callable[[StageContext], StageResult]


def _digest(path: Path) -> str:
    """A file's short content hash, streamed through the one reader ('' when absent)."""
    from trainers.harness import userfiles

    return (userfiles.file_sha256(path) or "")[:16] if path.is_file() else ""


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        return read_training_manifest(folder)
    except DataError:  # a torn or foreign manifest: the stage is simply not complete
        return None


# outputs are written relative to the run folder (a run moved or copied elsewhere then reads
# its own files, never the old place's); a manifest without this mark holds them as given
OUTPUTS_BASE = "run"


def stage_output(folder: Path, name: str) -> str | None:
    """The one reader of a complete stage's named output (a path), resolved against the run
    folder the stage sits in; None when the stage is not complete or has no such output."""
    m = read_manifest(folder) or {}
    value = (m.get("outputs") or {}).get(name) if m.get("status") == "complete" else None
    if not isinstance(value, str):
        return None
    if m.get("outputs_base") == OUTPUTS_BASE and not Path(value).is_absolute():
        from trainers.harness import userfiles

        # a value read from a file: it must stay inside the run folder (no `..` out of it)
        return str(userfiles.inside(folder.parent, value, f"{folder / MANIFEST}: output {name}"))
    return value


def _relative_to_run(value: str, out: Path) -> str:
    """``value`` relative to the run folder ``out`` when it is a path inside it."""
    try:
        return Path(value).resolve().relative_to(out.resolve()).as_posix()
    except (ValueError, OSError):
        return value


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
    """The stage's fields, merged into the manifest the engine wrote (if it ran one)."""
    base = read_manifest(ctx.folder) or {}
    manifest = {
        **base,
        "kind": "training",
        "algorithm": "cppo",
        "stage": ctx.name,
        "status": status,
        "artifacts": list(result.artifacts) if result else [],
        "outputs": {
            k: _relative_to_run(v, ctx.folder.parent)
            for k, v in (result.outputs if result else {}).items()
        },
        "outputs_base": OUTPUTS_BASE,
        "consumed": {
            k: {"path": v, "manifest_sha256": _digest(Path(v).parent / MANIFEST)}
            for k, v in sorted(ctx.consumed.items())
        },
        "stage_config": dict(ctx.config),
        "summary": result.summary if result else {},
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # this run only: a resumed stage counts from its resume
        "wall_seconds": round(time.monotonic() - ctx.started, 1),
        **({} if base else provenance()),
        **extra,
    }
    atomic_write_text(ctx.folder / MANIFEST, json.dumps(manifest, indent=2, default=str))


# single-process work: the main process runs these while the others wait (module ranks)
SINGLE_PROCESS = frozenset({"sft", "rm", "audit"})
# a complete stage that --resume may continue when only how long it runs changed (a larger
# joint.max_steps with the epochs to match): the engine resumes it from its last state
EXTENDABLE = frozenset({"joint"})


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def settings_changes(recorded: Any, requested: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Where a stage's recorded settings differ from this run's: dotted key -> [before, now].
    A key one side lacks (recorded before the key existed) is not a change."""
    before = _flat(recorded if isinstance(recorded, Mapping) else {})
    now = _flat(json.loads(json.dumps(dict(requested), default=str)))
    return {k: [before[k], now[k]] for k in sorted(set(before) & set(now)) if before[k] != now[k]}


# the pipeline settings a --resume may change: the engine's keys that say how a run is
# executed, saved or logged, or how long it goes (engine.RESUMABLE_KEYS), and the joint
# stage's length. A stage's own keys (sft.epochs, rm.epochs, warmup.max_steps, tau, ...)
# change what that stage made, whatever their name
JOINT_LENGTH = "settings.joint.max_steps"


def _resumable(key: str) -> bool:
    from trainers.engine.manifest import RESUMABLE_KEYS

    section, _, leaf = key.removeprefix("settings.").rpartition(".")
    return key == JOINT_LENGTH or (section == "engine" and leaf in RESUMABLE_KEYS)


def _check_settings(out: Path, name: str, requested: Mapping[str, Any]) -> bool:
    """A complete stage continues only the experiment it was: a changed setting that changes
    what it trained is one line (the stage would otherwise be skipped with the old settings
    while the run claims the new ones). True when it must run again to go on longer."""
    recorded = (read_manifest(out / name) or {}).get("stage_config")
    changes = settings_changes(recorded, requested)
    for key, (before, now) in changes.items():
        if not _resumable(key):
            shown = key.removeprefix("settings.")
            raise DataError(
                f"{out / name}: --resume would change {shown} ({str(before)[:40]} -> "
                f"{str(now)[:40]}) of this complete stage; train into another --out"
            )
    return bool(changes) and name in EXTENDABLE


def run_stages(
    out: Path,
    stages: Mapping[str, StageFn],
    selected: Sequence[str],
    config: Mapping[str, Mapping[str, Any]],
    echo: Callable[[str], None] = print,
    progress: bool = False,
) -> dict[str, str]:
    """Run ``selected`` in pipeline order; returns stage -> "skipped" | "ran".
    A ``PipelineStop`` is recorded in the stage's manifest (status "stopped") and re-raised."""
    unknown = [s for s in selected if s not in stages]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; known: {', '.join(stages)}")
    done: dict[str, str] = {}
    main = ranks.is_main()
    order = [s for s in stages if s in selected]
    # which stages are already complete, decided by every process from the same files before
    # any stage of this run writes one: read live, a slow process saw the main process's
    # fresh manifest, skipped that stage's barrier and left the others waiting at the next
    complete = {name: is_complete(out / name) for name in order}
    for name in order:  # the same files on every process: the same answer, before any barrier
        if complete[name] and _check_settings(out, name, config.get(name, {})):
            complete[name] = False
    ranks.barrier()
    for name in order:
        folder = out / name
        if complete[name]:
            echo(f"[{name}] complete, skipped")
            done[name] = "skipped"
            continue
        single = name in SINGLE_PROCESS
        if single and not main:  # the main process runs it; this one waits for its files
            ranks.barrier()
            if not is_complete(folder):
                raise PipelineStop(name, "the main process did not complete this stage")
            done[name] = "ran"
            continue
        OutDir(out).folder(name)  # a link planted at a stage's name: one line, not followed
        inputs = {s: out / s for s in stages}
        ctx = StageContext(name, folder, config.get(name, {}), inputs, progress=progress)
        echo(f"[{name}] running")
        try:
            result = stages[name](ctx)
            if main:
                write_manifest(ctx, "complete", result)
        except PipelineStop as stop:
            if main:
                write_manifest(ctx, "stopped", None, error=str(stop), revisit=stop.revisit)
            raise
        finally:  # one barrier per stage on every process: the others then see the manifest
            ranks.barrier()
        done[name] = "ran"
    return done
