"""The manifest of a training run: what was trained, on what, by which code, on which layout.

``<out>/train_manifest.json`` (main process), rewritten on resume with the resume step appended:
algorithm, full config, base model (label and path), seed, data source, the hash of the
training problem ids, the overlaps removed by decontamination (and the evaluation sets
checked), package version, git commit, and the accelerate topology.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from trainers.engine.artifacts import atomic_write_text
from trainers.harness import TRAIN_MANIFEST, DataError, env, git_commit, quote, read_manifest

MANIFEST = TRAIN_MANIFEST


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def provenance() -> dict[str, Any]:
    """Which code and libraries wrote a training artifact (every manifest carries these)."""
    return {
        "package_version": _version("cppo-bench"),
        "versions": {k: _version(k) for k in ("torch", "transformers", "accelerate")},
        "python": platform.python_version(),
        "git_commit": git_commit(mark_dirty=True),
    }


def topology(accelerator: Any, model: Any = None) -> dict[str, Any]:
    """The run's layout; with ``model``, how its parameters are really held (read from the
    sharded model, not the config: an offload that did not apply shows here)."""
    from trainers.engine import deepspeed_support

    state = accelerator.state
    extra = {}
    if model is not None:
        from trainers.engine.sharding import describe

        extra["sharding"] = describe(model)
    deepspeed = {}
    if deepspeed_support.active(accelerator):  # which ZeRO stage, and which DeepSpeed, ran
        deepspeed = {
            "zero_stage": deepspeed_support.zero_stage(accelerator),
            "deepspeed_version": _version("deepspeed"),
        }
    return {
        **deepspeed,
        "distributed_type": accelerator.distributed_type.name,
        "num_processes": accelerator.num_processes,
        "num_machines": getattr(state, "num_machines", None) or env.world_size("NNODES"),
        "device": str(accelerator.device),
        "mixed_precision": str(accelerator.mixed_precision),
        **extra,
    }


def flat_config(spec: Any) -> dict[str, Any]:
    return {**dataclasses.asdict(spec.config), **dataclasses.asdict(spec.algorithm.config)}


def _verified_by(setting: str) -> str:
    from trainers.engine.rewards import verifier_mode  # the reward's own decision

    return verifier_mode(setting)


def write(
    out: Path,
    spec: Any,
    cfg: Any,
    base_label: str,
    model_path: str,
    accelerator: Any,
    total_steps: int,
    start_step: int,
    model: Any = None,
) -> Path:
    path = Path(out) / MANIFEST
    try:
        previous = read_manifest(Path(out)) or {}
    except DataError:
        previous = {}  # a torn or foreign manifest is rewritten, not trusted
    ts = spec.training
    record = {
        "kind": "training",
        "algorithm": spec.algorithm.name,
        "config": flat_config(spec),
        "base_model": base_label,
        "model_path": model_path,
        "base_from_run": base_from_run(out, base_label),
        "seed": spec.seed,
        "data": {
            "source": ts.source,
            "problems": len(ts.problems),
            "problem_ids_sha256": ts.ids_hash,
            "eval_sets_checked": ts.eval_sets,
            "eval_sets_unavailable": ts.skipped_eval,
            "removed_overlaps": ts.removed,
            "allow_overlap": bool(spec.extra_manifest.get("allow_overlap", False)),
        },
        "total_steps": total_steps,
        **provenance(),
        "topology": topology(accelerator, model),
        # where the verifier reward ran (the config's "" default does not say): None for a
        # reward the run was given in code
        "reward_verified_by": None
        if getattr(spec, "reward", None) is not None
        else _verified_by(getattr(cfg, "reward_verifier", "")),
        "started_at": previous.get("started_at") or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "resumed_at_steps": [
            *previous.get("resumed_at_steps", []),
            *([start_step] if start_step else []),
        ],
        "resume_changes": _resume_changes(previous, spec, start_step),
        **{k: v for k, v in spec.extra_manifest.items() if k != "allow_overlap"},
    }
    atomic_write_text(path, json.dumps(record, indent=2, default=str) + "\n")
    return path


def recorded(out: Path) -> dict[str, Any]:
    """The run's manifest ({} when there is none, or it is torn: nothing to compare)."""
    try:
        return read_manifest(Path(out)) or {}
    except DataError:
        return {}


def nothing_to_resume(out: Path, previous: dict[str, Any]) -> str:
    """What a --resume with no saved state does, in one line: a run stopped before its first
    state save (every `state_every` steps) kept no step, so it starts again from step 0, with
    the config its manifest records (a change that alters training was refused already)."""
    if not previous:
        return f"--resume: nothing to resume in {out} (no training run there); starting a new one"
    every = (previous.get("config") or {}).get("state_every")
    when = f" (a state is saved every {every} steps)" if every else ""
    return (
        f"--resume: nothing to resume in {out}: the run stopped before its first state "
        f"save{when}; training starts again from step 0 with the run's recorded config"
    )


def base_from_run(out: Path, base_label: str) -> str | None:
    """Where a local base model lies seen from the run folder (``../warmup/checkpoints/...``
    for a CPPO stage's), so a run moved or copied together with its base still resumes;
    None for a hub id."""
    if not base_label or not Path(base_label).exists():
        return None
    return os.path.relpath(Path(base_label).resolve(), Path(out).resolve())


def check_resumable(out: Path, algorithm: str, base_label: str) -> None:
    """A resume continues the same run: same algorithm, same base model (one line if not).
    The same base is the same label, or the same place relative to the run when both moved
    together (a CPPO pipeline copied elsewhere: its stages' bases are its own folders)."""
    previous = read_manifest(out) or {}
    algo, base = previous.get("algorithm"), previous.get("base_model")
    moved = previous.get("base_from_run")
    if moved is not None and moved == base_from_run(out, base_label):
        base = base_label
    if algo is not None and algo != algorithm:
        raise DataError(
            f"{out}: a {str(algo)[:40]} run; --resume continues it only as {str(algo)[:40]}, "
            f"not {algorithm}"
        )
    if base is not None and base != base_label:
        raise DataError(
            f"{out}: trained from {quote(str(base)[:80])}; --resume needs that base model, "
            f"not {quote(base_label[:80])}"
        )


# config keys a --resume may change: how the run is executed, saved or logged, or how long
# it runs (checked against the step it holds), never what one step trains; each change is
# recorded in the manifest's resume_changes
RESUMABLE_KEYS = frozenset({
    "max_steps", "epochs", "save_every", "state_every", "keep_folders", "report_to",
    "log_param_step_norm", "rollout_batch", "micro_batch_rows", "verify_workers",
    "reward_verifier", "max_rollouts_per_step",
    "logits_chunk_tokens", "gradient_checkpointing", "trusted_state_globals",
    "vllm_gpu_memory_utilization", "vllm_max_model_len", "vllm_enforce_eager", "vllm_sleep",
})  # fmt: skip


def _config_changes(previous: dict[str, Any], spec: Any) -> dict[str, list[Any]]:
    """Config keys whose value differs from the stored run's: key -> [before, now]."""
    before = previous.get("config")
    if not isinstance(before, dict):
        return {}
    now = json.loads(json.dumps(flat_config(spec), default=str))
    # a key only one side has (a config key added since the run was stored) is no change
    keys = sorted(set(before) & set(now))
    return {k: [before[k], now[k]] for k in keys if before[k] != now[k]}


def _resume_changes(previous: dict[str, Any], spec: Any, start_step: int) -> list[Any]:
    """The manifest's log of what each resume changed (harmless keys only: the others are
    refused by check_resume_config before anything runs)."""
    log = list(previous.get("resume_changes") or [])
    changed = _config_changes(previous, spec) if start_step else {}
    if changed:
        log.append({"at_step": start_step, "changed": changed})
    return log


def check_resume_config(out: Path, spec: Any) -> dict[str, list[Any]]:
    """A resume continues the same experiment: a change to a key outside RESUMABLE_KEYS
    (lr, kl_beta, temperature, the algorithm's own settings...), to the seed or to the
    training data is one line naming it; the harmless changes are returned (and logged in
    the manifest by `write`)."""
    previous = read_manifest(Path(out)) or {}  # a malformed one is one DataError line
    changed = _config_changes(previous, spec)
    if previous.get("seed") is not None and previous.get("seed") != spec.seed:
        changed["seed"] = [previous.get("seed"), spec.seed]
    old_ids = (previous.get("data") or {}).get("problem_ids_sha256")
    if old_ids is not None and old_ids != spec.training.ids_hash:
        changed["training data (problem ids)"] = [old_ids[:12], str(spec.training.ids_hash)[:12]]
    allowed = RESUMABLE_KEYS | set(getattr(spec.algorithm, "resume_managed_keys", ()))
    for key, (before, now) in changed.items():
        if key not in allowed:
            raise DataError(
                f"{out}: --resume would change {key} ({str(before)[:40]} -> {str(now)[:40]}), "
                "which changes what this run trains; resume with its settings, or train a "
                "new run into another --out"
            )
    return changed


def check_resume_steps(out: Path, start: int, total: int, *, say: bool = True) -> None:
    """What a resume continues from, said once; a step count below the step the run holds
    is one line (it would otherwise report the smaller count as trained)."""
    if total < start:
        raise DataError(
            f"{out}: the run already holds step {start}; this config gives {total} steps in "
            "all, so there is nothing to train: raise max_steps (or epochs) past "
            f"{start} to continue it"
        )
    if say:  # the main process: once per run, to stderr like the loop's other notes
        left = total - start
        from trainers.harness import echo

        echo(f"resumed from step {start} of {total} ({out}); {left} step(s) to train", err=True)
