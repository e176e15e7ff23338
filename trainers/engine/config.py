"""The engine's keys: ``TrainConfig``, shared by every algorithm, with the study's defaults.

An engine algorithm's config is one flat namespace: these keys plus the fields of the
algorithm's own frozen dataclass (``--set lr=1e-6 --set n=8``); ``build_flat`` fills both from
layered mappings through the one config system (trainers.engine.layers). A CPPO stage that runs
the engine takes the same keys from the pipeline's ``engine`` section.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainers.engine.layers import CONFIG_DIR, ConfigError, build
from trainers.harness import quote

__all__ = ["CONFIG_DIR", "ConfigError", "TrainConfig", "build_flat", "flat_keys"]


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
    # the KL weight on CPPO's solver tokens instead of kl_beta; null = kl_beta (the study's one
    # weight). Ours: anchors a shared solver to its base while the planner trains (docs/learning.md)
    kl_beta_solver: float | None = None
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
    # the most rollouts one step (or one problem of a CPPO data stage) may ask for: each is
    # built, generated and held in memory at once, so a count mistyped in a config (n: 16000000)
    # is refused in one line before anything is built. Raise it for a larger job.
    max_rollouts_per_step: int = 65536
    vllm_gpu_memory_utilization: float = 0.3
    # vLLM's context (prompt + completion) in tokens; 0 = the run's longest prompt plus
    # max_tokens (plus what the algorithm's prompts carry), at most the model's: vLLM checks
    # at start-up that one full-length request fits its KV cache, and the model's own
    # context (262,144 tokens for Qwen3.5) does not fit beside a 9B policy. docs/gpu.md
    vllm_max_model_len: int = 0
    vllm_enforce_eager: bool = False  # True: no CUDA graphs (less memory, slower decoding)
    # free vLLM's weights and KV cache during the update (sleep mode, where vLLM supports it)
    vllm_sleep: bool = False
    # the chat template's enable_thinking: the study's prompts expect a direct answer
    enable_thinking: bool | None = False
    # layout over several processes: auto = FSDP2 when accelerate launches with an FSDP
    # config (offloaded with its offload_params); fsdp2 = always shard (applied by the engine
    # itself, also on CPU); fsdp2_offload = fsdp2 with fp32 weights, gradients and the AdamW
    # step in host memory, also on one process (a 4B policy on one 80 GB GPU); none =
    # replicate (DDP). One process shards only with fsdp2_offload. docs/gpu.md
    sharding: Literal["auto", "none", "fsdp2", "fsdp2_offload"] = "auto"
    gradient_checkpointing: bool = False  # recompute activations in backward (memory)
    # torch.set_float32_matmul_precision, set once the rollout engine is built (vLLM's sets
    # "highest" for the whole process): "high" lets fp32 matmuls use TF32 on Ampere and
    # newer (~8x the fp32 throughput, 10-bit mantissa products, fp32 accumulation); "highest"
    # keeps full fp32. docs/gpu.md "Precision"
    matmul_precision: Literal["highest", "high", "medium"] = "high"
    # seconds a collective may wait before the process group gives up (NCCL's watchdog
    # kills the run; torch's default is 600). The CPPO pipeline's idle processes wait in a
    # barrier while the main process runs SFT, RM training and the audit alone, for hours
    # on a 4B / 9B policy. docs/gpu.md "Time-outs"
    dist_timeout_s: int = 21600
    # the LM head + log-softmax over at most this many completion tokens at a time, each
    # chunk recomputed in backward: one chunk's (N, V) fp32 logits instead of a micro-batch's
    # (B, C, V) (2 GB per 2,048-token row at Qwen3.5's 248k vocabulary); the same log-probs
    # and gradients. 0 = off. docs/gpu.md "Memory on one 80 GB GPU"
    logits_chunk_tokens: int = 512
    # TRL's truncated importance-sampling cap on pi_old / pi_vllm per token; null = off
    vllm_is_cap: float | None = None
    reward: str = "pass"
    # an augmented test set (`cppo-bench augment --out DIR`): the reward judges with the
    # problems' own tests plus its tests, so a policy cannot learn weak tests ("" = off)
    reward_tests: str = ""
    # sandboxes per process at once; 0 = the node's cores // its training processes, >= 1
    verify_workers: int = 0
    # where rewards are verified: `cppo-bench serve` URL(s) (commas: several, spread over
    # them); "local" = one server per node, started by local rank 0 and shared by the node's
    # ranks; "inprocess" = in each process; "" (auto) = "local" under a multi-process launch
    # (LOCAL_WORLD_SIZE > 1), else in-process (verify_workers: in-process only). docs/serve.md
    reward_verifier: str = ""
    # the training problems, by id, in that order (empty = every decontaminated problem):
    # the CPU demo trains on problems its 135M model can pass, so its steps train on something
    problem_ids: tuple[str, ...] = ()
    # checkpoints and logs
    save_every: int = 50  # HF folder every N steps (and at the end)
    # resumable state every N steps (and at the end): SIGKILL loses at most these steps. A
    # state is the full fp32 weights and AdamW moments (~48 GB for a 4B policy, gathered to
    # rank 0's host under FSDP2): ~1 min a save against a 2-4 min step, so every step would
    # cost 25-50 %; every 10th costs a few percent. docs/gpu.md "Training state"
    state_every: int = 10
    keep_folders: int = 0  # 0 = keep every HF folder
    report_to: str = "none"  # none | tensorboard | wandb (trainers.engine.trackers)
    log_param_step_norm: bool = True
    # a DeepSpeed training state is pickled (DeepSpeed loads it with weights_only=False);
    # a resume first reads every file with torch's restricted unpickler, which admits only
    # tensors and the DeepSpeed classes the engine knows (deepspeed_support.STATE_GLOBALS).
    # Comma-separated dotted names of further classes to admit, for a state you wrote
    # yourself with a DeepSpeed that pickles another class ("" = none). docs/gpu.md
    trusted_state_globals: str = ""

    @property
    def uses_reference(self) -> bool:
        """Whether any trained token carries a KL term: the frozen reference is then built."""
        return self.kl_beta > 0 or bool(self.kl_beta_solver)

    def __post_init__(self) -> None:
        positive = (
            "prompts_per_step",
            "micro_batch_rows",
            "max_tokens",
            "epochs",
            "updates_per_rollout",
            "rollout_batch",
            "max_rollouts_per_step",
            "save_every",
            "state_every",
            "dist_timeout_s",
        )
        from trainers.engine.rewards import VERIFIERS  # (lazy: rewards imports the verifier)

        # a named setting (auto, inprocess, local) or service URLs
        urls = "" if self.reward_verifier in VERIFIERS else self.reward_verifier
        for url in filter(None, (u.strip() for u in urls.split(","))):
            if not url.startswith(("http://", "https://")) or any(c.isspace() for c in url):
                raise ConfigError(f"config reward_verifier: {quote(url, 80)} is not an http(s) URL")
        for name in ("keep_folders", "verify_workers", "logits_chunk_tokens"):
            # keep_folders=-100 would make the pruning slice delete the newest checkpoints
            if getattr(self, name) < 0:
                raise ConfigError(f"config {name}: must be >= 0, got {getattr(self, name)}")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"config {f.name}: must be a finite number, got {value}")
        if self.vllm_max_model_len < 0:
            raise ConfigError(
                "config vllm_max_model_len: must be >= 0 (0 = longest prompt + max_tokens)"
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
        if self.kl_beta_solver is not None and not self.kl_beta_solver >= 0:
            raise ConfigError(f"config kl_beta_solver: >= 0 or null, got {self.kl_beta_solver}")
        from trainers.engine.trackers import TRACKERS

        if self.report_to not in TRACKERS:
            known = ", ".join(TRACKERS.names())
            raise ConfigError(f"config report_to: one of {known}, got {quote(self.report_to)}")


def check_rollouts(count: int, what: str, cap: int) -> None:
    """One line when ``count`` rollouts (``what`` says how they multiply) pass ``cap``, the
    engine key max_rollouts_per_step: every trainer path asks here before it builds them."""
    if count > cap:
        raise ConfigError(
            f"config: {what} make {count:,} rollouts, past max_rollouts_per_step {cap:,} "
            "(lower them, or raise max_rollouts_per_step for a job this large)"
        )


def flat_keys(algo_config_cls: type) -> list[str]:
    """Every key of an engine algorithm's flat namespace."""
    return sorted(
        {f.name for f in dataclasses.fields(TrainConfig)}
        | {f.name for f in dataclasses.fields(algo_config_cls)}
    )


def build_flat(algo_config_cls: type, values: Mapping[str, Any]) -> tuple[TrainConfig, Any]:
    """(engine config, algorithm config) from one flat mapping of keys; an algorithm key
    shadows an engine key of the same name. Unknown keys are one line listing the known."""
    algo_names = {f.name for f in dataclasses.fields(algo_config_cls)}
    engine_names = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = [k for k in values if k not in algo_names | engine_names]
    if unknown:
        raise ConfigError(
            f"unknown config key {unknown[0]!s:.60} "
            f"(known: {', '.join(flat_keys(algo_config_cls))})"
        )
    engine = build(TrainConfig, {k: v for k, v in values.items() if k not in algo_names})
    algo = build(algo_config_cls, {k: v for k, v in values.items() if k in algo_names})
    return engine, algo
