"""Training configuration: one flat namespace of keys, from YAML files and ``--set KEY=VAL``.

Keys are the fields of ``TrainConfig`` (the engine's, shared by every algorithm) plus the
fields of the algorithm's own config dataclass. Layers, later wins: the algorithm's YAML in
``trainers/configs/`` (the study's settings), the ``demo`` preset when asked for, the user's
``--config FILE``, then each ``--set``. An unknown key or a value of the wrong type is one
line naming it (``ConfigError``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import yaml

from cppo_bench.problem import DataError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


class ConfigError(DataError):
    """A bad configuration key or value; the CLI prints the one line."""


@dataclass(frozen=True)
class TrainConfig:
    # optimiser (study "Baseline Implementation Details": AdamW lr 5e-7, fp32 trainable weights)
    lr: float = 5e-7
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    warmup_steps: int = 0
    # TRL's default; the study does not name one. 0 turns clipping off (the norm is still logged)
    max_grad_norm: float = 1.0
    # loss (study: clip 0.2, KL 0.01 with the k3 estimator)
    clip_eps: float = 0.2
    kl_beta: float = 0.01
    # study Eq. cppo-loss: per-sequence GRPO objectives (TRL "grpo"); docs/training-loss.md
    aggregation: Literal["sequence-mean", "token-mean", "constant", "grpo", "dapo", "dr_grpo"] = (
        "sequence-mean"
    )
    updates_per_rollout: int = 1  # PPO epochs over one rollout batch (>1 makes the clip bite)
    reference_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    # sampling (study: temperature 0.7, at most 2048 decoded tokens)
    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 2048
    prompt_version: str = ""  # "" = the harness's default prompt version
    # schedule (study: 30 epochs over the training pool)
    epochs: int = 30
    max_steps: int = 0  # 0 = run every epoch
    prompts_per_step: int = 8  # global: split evenly over the processes
    micro_batch_rows: int = 8  # rows per forward/backward (gradient accumulation)
    # rollouts and rewards
    rollout_engine: str = "hf"
    rollout_batch: int = 8
    vllm_gpu_memory_utilization: float = 0.3
    # TRL's truncated importance-sampling cap on pi_old / pi_vllm per token; null = off
    vllm_is_cap: float | None = None
    reward: str = "pass"
    verify_workers: int = 0  # 0 = one per CPU core
    # checkpoints and logs
    save_every: int = 50  # HF folder every N steps (and at the end)
    state_every: int = 1  # resumable state every N steps: SIGKILL loses at most these steps
    keep_folders: int = 0  # 0 = keep every HF folder
    report_to: str = "none"  # none | tensorboard (accelerate trackers)
    log_param_step_norm: bool = True

    def __post_init__(self) -> None:
        positive = (
            "prompts_per_step",
            "micro_batch_rows",
            "max_tokens",
            "epochs",
            "updates_per_rollout",
            "rollout_batch",
            "save_every",
            "state_every",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"config {name}: must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ConfigError(f"config lr: must be > 0, got {self.lr}")
        if not self.temperature > 0:  # T = 0: greedy groups have no variance; logits / 0
            raise ConfigError(f"config temperature: training needs > 0, got {self.temperature}")
        if self.vllm_is_cap is not None and not (
            self.vllm_is_cap > 0 and self.rollout_engine == "vllm"
        ):
            raise ConfigError("config vllm_is_cap: > 0 or null, and only with rollout_engine vllm")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"config top_p: must be in (0, 1], got {self.top_p}")
        if self.clip_eps <= 0 or self.kl_beta < 0 or self.max_grad_norm < 0:
            raise ConfigError("config clip_eps must be > 0, kl_beta and max_grad_norm >= 0")
        if self.report_to not in ("none", "tensorboard"):
            raise ConfigError(f"config report_to: none or tensorboard, got {self.report_to!r}")


def _coerce(name: str, hint: Any, value: Any) -> Any:
    """``value`` (from YAML or a --set string) as the field's type, or a ConfigError."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"config {name}: {value!r} is not one of {', '.join(choices)}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or value in ("none", "null", "None"):
            return None
        return _coerce(name, args[0], value)
    try:
        if hint is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes")
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if hint is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(value)
        if hint is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if hint is str:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"config {name}: expected {getattr(hint, '__name__', hint)}, got {value!r}"
        ) from None
    return value


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path}: not YAML ({exc})".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping of keys to values")
    return data


def parse_sets(pairs: tuple[str, ...] | list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE")
        out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
    return out


def build_configs(algo_config_cls: type, layers: list[dict[str, Any]]) -> tuple[TrainConfig, Any]:
    """(engine config, algorithm config) from the layered key/value mappings."""
    engine_hints, algo_hints = _hints(TrainConfig), _hints(algo_config_cls)
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    engine_kw, algo_kw = {}, {}
    for key, value in merged.items():
        if key in algo_hints:
            algo_kw[key] = _coerce(key, algo_hints[key], value)
        elif key in engine_hints:
            engine_kw[key] = _coerce(key, engine_hints[key], value)
        else:
            known = sorted(set(engine_hints) | set(algo_hints))
            raise ConfigError(f"unknown config key {key!r} (known: {', '.join(known)})")
    try:
        return TrainConfig(**engine_kw), algo_config_cls(**algo_kw)
    except ConfigError:
        raise
    except ValueError as exc:  # an algorithm config's own check
        raise ConfigError(f"config: {exc}") from None


def as_dict(engine: TrainConfig, algo: Any) -> dict[str, Any]:
    return {**dataclasses.asdict(engine), **dataclasses.asdict(algo)}


def config_keys(algo_config_cls: type) -> list[str]:
    return sorted({f.name for f in fields(TrainConfig)} | {f.name for f in fields(algo_config_cls)})
