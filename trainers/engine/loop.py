"""The training loop every trainer shares: rollout -> verify -> advantages -> update.

``train(spec)`` runs one training run in this process; under ``accelerate launch`` / torchrun
every process runs it and accelerate joins them (DDP, FSDP, DeepSpeed: the user's accelerate
config decides). Each step takes ``prompts_per_step`` problems from the data stream, this
process's contiguous share of them is rolled out (per-request seeds: the samples do not
depend on the layout), scored by the verifier, turned into rows by the algorithm, and one
optimizer step is taken on the global batch (``update.policy_update``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cppo_bench.methods.direct import render_messages, stop_strings
from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.prompts import DEFAULT_VERSION
from cppo_bench.verifier import keep_sandboxes
from trainers.engine import checkpoint, data, deepspeed_support, manifest, sharding
from trainers.engine.algorithm import Algorithm, Messages
from trainers.engine.config import TrainConfig
from trainers.engine.context import step_context
from trainers.engine.metrics import MetricsLog, ParamSnapshot, Timer, step_metrics
from trainers.engine.rewards import RewardFn, reward_from_config
from trainers.engine.rollout import ROLLOUT_ENGINES


@dataclass
class RunSpec:
    """Everything a run needs, resolved by the CLI (or a test, or the CPPO pipeline)."""

    algorithm: Algorithm
    config: TrainConfig
    training: data.TrainingSet
    out_dir: Path
    model: str | None = None  # None: the embedded default model
    seed: int = 0
    resume: bool = False
    progress: bool = True
    prompt: Callable[[Problem], Messages] | None = None  # default: the direct-solve prompt
    stop: tuple[str, ...] | None = None
    reward: RewardFn | None = None  # default: REWARDS[config.reward]
    chat: str = "auto"
    # called after each step; a returned reason (plateau, target reached) ends the run there,
    # with its state and HF folder saved: the explicit stop signal of a stage
    on_step: Callable[[int, dict[str, Any]], str | None] | None = None
    extra_manifest: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainResult:
    out_dir: Path
    steps: int
    checkpoint: Path | None
    last_metrics: dict[str, Any]
    base_model: str = ""
    stopped: str | None = None  # the reason on_step gave for ending before the last step


def _accelerator(cfg: TrainConfig, out_dir: Path) -> Any:
    import importlib.util
    import os

    import torch
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    log_with = None if cfg.report_to == "none" else cfg.report_to
    if log_with == "tensorboard" and importlib.util.find_spec("tensorboard") is None:
        raise DataError(
            "report_to tensorboard needs TensorBoard: pip install 'cppo-bench[tensorboard]'"
        )
    kwargs = deepspeed_support.accelerator_kwargs(torch.cuda.is_available())
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if sharding.wants_offload(cfg.sharding) and torch.cuda.is_available() and world > 1:
        # offloaded shards are host tensors: the group needs gloo beside NCCL for them
        backend = InitProcessGroupKwargs(backend=sharding.mixed_backend())
        kwargs["kwargs_handlers"] = [*kwargs.get("kwargs_handlers", []), backend]
    return Accelerator(
        log_with=log_with,
        project_dir=str(out_dir),
        step_scheduler_with_optimizer=False,  # one scheduler step per optimizer step
        **kwargs,
    )


def _all_reduce_sum(accelerator: Any) -> Callable[[Any], Any]:
    if accelerator.num_processes == 1:
        return lambda t: t

    def reduce(t: Any) -> Any:
        return accelerator.reduce(t.to(accelerator.device), reduction="sum").cpu()

    return reduce


def _load_policy(spec: RunSpec, accelerator: Any) -> tuple[Any, Any, str, str]:
    import torch

    from cppo_bench.backends.default_model import ensure_default_model
    from cppo_bench.backends.hf import load_model

    with accelerator.main_process_first():  # the first process builds the embedded folder
        path = str(ensure_default_model()) if spec.model is None else spec.model
    # every process loads at once: under ZeRO-3, zero.Init broadcasts while loading, and a
    # process held back by main_process_first would never join it (deadlock)
    model, tokenizer, _ = load_model(path, dtype=torch.float32)
    model.config.use_cache = False  # training forwards need no KV cache
    return model, tokenizer, model_label(spec.model), path


def _optimizer(cfg: TrainConfig, model: Any) -> tuple[Any, Any]:
    import torch

    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=cfg.lr,
        betas=(cfg.adam_beta1, cfg.adam_beta2),
        eps=cfg.adam_eps,
        weight_decay=cfg.weight_decay,
    )
    warm = cfg.warmup_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0
    )
    return optimizer, scheduler


def model_label(model: str | None) -> str:
    """The base-model label a run records (and `cppo-bench run --base-model` takes): the
    embedded default's name, a local folder's resolved path, or the hub id as given. Every
    trainer and every evaluation hint spells it this one way, so report columns never split."""
    from cppo_bench.backends.default_model import DEFAULT_MODEL

    if model is None:
        return DEFAULT_MODEL
    local = Path(model).expanduser()
    return str(local.resolve()) if local.exists() else model


def train(spec: RunSpec) -> TrainResult:
    """One training run in this process (module docstring). A 1-process offloaded run gets
    its own 1-process group for the duration (``sharding.process_group``)."""
    with sharding.process_group(spec.config.sharding):
        return _train(spec)


def _train(spec: RunSpec) -> TrainResult:
    import torch

    from trainers.core.grpo import check_trainable_fp32, make_reference
    from trainers.core.loss import LossConfig

    cfg, algo = spec.config, spec.algorithm
    out = Path(spec.out_dir)
    accelerator = _accelerator(cfg, out)
    world, rank = accelerator.num_processes, accelerator.process_index
    if cfg.prompts_per_step % world:
        raise DataError(
            f"config prompts_per_step: {cfg.prompts_per_step} does not split evenly over "
            f"{world} processes"
        )
    existing = checkpoint.agreed_state(accelerator, out)
    if existing is not None and not spec.resume:
        raise DataError(f"{out} already holds a training run: pass --resume, or another --out")
    if existing is not None:
        manifest.check_resumable(out, spec.algorithm.name, model_label(spec.model))
    reduce_sum = _all_reduce_sum(accelerator)

    model, tokenizer, base_label, model_path = _load_policy(spec, accelerator)
    check_trainable_fp32(model)
    if cfg.gradient_checkpointing:  # activations recomputed in backward: memory for time
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    dtypes = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
    zero3 = deepspeed_support.zero_stage(accelerator) == 3
    reference = None
    if cfg.kl_beta and not zero3:  # copied before sharding: a full, frozen replica
        reference = make_reference(model, dtypes[cfg.reference_dtype]).to(accelerator.device)
    fsdp = sharding.uses_fsdp(cfg.sharding, world)
    if fsdp:  # the engine shards (FSDP2) itself: the same path on CPU and GPU
        offload = sharding.wants_offload(cfg.sharding)
        model = sharding.shard(model, accelerator.device, world, offload=offload)
    # created after sharding, over the DTensor shards: under offload they and the AdamW
    # moments live in host memory, so the step runs there
    optimizer, scheduler = _optimizer(cfg, model)
    deepspeed_support.fill_config(accelerator, cfg.micro_batch_rows, cfg.max_grad_norm)
    if fsdp:
        scheduler = accelerator.prepare(scheduler)
    else:
        model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    if cfg.kl_beta and zero3:  # after prepare: accelerate has resolved the config's "auto"s
        reference = deepspeed_support.reference(
            model_path, dtypes[cfg.reference_dtype], accelerator
        )
    policy = accelerator.unwrap_model(model)
    sharded_state = (model, optimizer) if fsdp else None
    pad_id = (
        tokenizer.pad_token_id
        if tokenizer.pad_token_id is not None
        else (tokenizer.eos_token_id or 0)
    )

    start = 0
    if existing is not None:
        trusted = cfg.trusted_state_globals
        start = int(checkpoint.load_state(accelerator, existing, sharded_state, trusted)["step"])
    problems = spec.training.problems
    total = data.steps_for(len(problems), cfg.prompts_per_step, cfg.epochs, cfg.max_steps)
    log = MetricsLog(out, accelerator.is_main_process)
    log.truncate_after(start)
    if accelerator.is_main_process:
        manifest.write(
            out, spec, cfg, base_label, model_path, accelerator, total, start, model=model
        )
    if cfg.report_to != "none":
        accelerator.init_trackers("cppo-bench-train", config=manifest.flat_config(spec))

    engine_opts = {
        "batch_size": cfg.rollout_batch,
        "model_path": model_path,
        "gpu_memory_utilization": cfg.vllm_gpu_memory_utilization,
        "max_model_len": cfg.vllm_max_model_len or None,
        "enforce_eager": cfg.vllm_enforce_eager,
        "sleep": cfg.vllm_sleep,
        "chat": spec.chat,
        "enable_thinking": cfg.enable_thinking,
        "process_index": rank,
        "local_process_index": accelerator.local_process_index,
        "num_processes": world,
    }
    rollout = ROLLOUT_ENGINES.get(cfg.rollout_engine)(policy, tokenizer, engine_opts)
    reward_fn = spec.reward or reward_from_config(cfg)
    version = cfg.prompt_version or DEFAULT_VERSION
    prompt_fn = spec.prompt or (lambda p: render_messages(p, version))
    stop = spec.stop if spec.stop is not None else stop_strings(version)
    from cppo_bench.backends.base import SamplingParams

    sampling = SamplingParams(
        temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens
    )
    loss_cfg = LossConfig(
        clip_eps=cfg.clip_eps,
        beta=cfg.kl_beta,
        aggregation=cfg.aggregation,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,  # every log-prob of the loss is taken at the sampling T
        is_cap=cfg.vllm_is_cap,
        logits_chunk_tokens=cfg.logits_chunk_tokens,
    )
    params = [p for p in model.parameters() if p.requires_grad]
    share = cfg.prompts_per_step // world
    metrics: dict[str, Any] = {}
    saved: Path | None = None
    stopped: str | None = None
    warned_overlong = False
    from cppo_bench.util.progress import progress_bar

    quiet = not (spec.progress and accelerator.is_main_process)
    bar_cm = progress_bar("train", total, quiet=quiet, completed=start)
    bar = bar_cm.__enter__()
    sandboxes = keep_sandboxes()  # the verifier's sandboxes live across steps
    sandboxes.__enter__()
    try:
        for step in range(start, total):
            timer = Timer()
            batch = data.step_problems(problems, step, cfg.prompts_per_step, spec.seed)
            local = batch[rank * share : (rank + 1) * share]
            ctx = step_context(
                step,
                spec,
                prompt_fn,
                stop,
                rollout,
                sampling,
                reward_fn,
                timer,
                policy,
                tokenizer,
                pad_id,
                cfg.micro_batch_rows,
                (spec.chat, cfg.enable_thinking),
                cfg.logits_chunk_tokens,
            )
            ctx.reduce_sum = reduce_sum  # global-batch statistics (CPPO M = 1 "loo")
            scored = algo.collect(local, ctx)
            with timer.phase("advantage"):
                step_rows = algo.rows(scored, ctx)
            snap = None

            def before_step(params: Sequence[Any] = params) -> None:
                nonlocal snap
                if cfg.log_param_step_norm:
                    snap = ParamSnapshot(params)

            with timer.phase("update"):
                from trainers.engine.update import old_policy_logprobs, policy_update

                old = None
                if cfg.updates_per_rollout > 1:
                    with sharding.gathered(model):  # per-process counts of forwards differ
                        old = old_policy_logprobs(
                            model,
                            step_rows.rows,
                            cfg.micro_batch_rows,
                            pad_id,
                            accelerator.device,
                            cfg.temperature,
                            cfg.logits_chunk_tokens,
                        )
                for _ in range(cfg.updates_per_rollout):
                    result = policy_update(
                        accelerator,
                        model,
                        reference,
                        optimizer,
                        step_rows.rows,
                        loss_config=loss_cfg,
                        micro_rows=cfg.micro_batch_rows,
                        pad_id=pad_id,
                        max_grad_norm=cfg.max_grad_norm,
                        all_reduce_sum=reduce_sum,
                        on_before_step=before_step,
                        old_logprobs=old,
                    )
                    scheduler.step()  # once per optimizer step, not once per rollout
                rollout.sync(policy)
            metrics = step_metrics(
                step,
                cfg,
                len(problems),
                scheduler,
                result,
                snap,
                reduce_sum,
                step_rows.values,
                scored,
                timer,
            )
            log.write(metrics)
            if cfg.report_to != "none":
                accelerator.log(metrics, step=step + 1)
            done = step + 1
            state_now = done % cfg.state_every == 0 or done == total
            hf_now = done % cfg.save_every == 0 or done == total
            if state_now:
                checkpoint.save_state(
                    accelerator, out, done, {"cursor": done, "seed": spec.seed}, sharded_state
                )
            if hf_now:
                saved = (
                    checkpoint.save_hf(accelerator, model, tokenizer, out, done, cfg.keep_folders)
                    or saved
                )
            if spec.on_step is not None:
                stopped = spec.on_step(done, metrics) or None
            bar(1)
            overlong = metrics.get("overlong_prompts") or 0
            if overlong and not warned_overlong and accelerator.is_main_process:
                warned_overlong = True  # once a run: metrics.jsonl has every step's count
                print(
                    f"warning: step {done}: {overlong} rollouts were not decoded, their prompts "
                    "fill the model's context (reward 0, nothing trained; metric "
                    "overlong_prompts)",
                    file=sys.stderr,
                )
            bar.note(
                f"reward {metrics.get('reward_mean') or 0:.3f} kl {metrics.get('kl') or 0:.2e}"
                + (f" ({overlong} prompts fill the context: reward 0)" if overlong else "")
            )
            if stopped is not None:  # end here, with this step's state and HF folder on disk
                if not state_now:
                    state = {"cursor": done, "seed": spec.seed}
                    checkpoint.save_state(accelerator, out, done, state, sharded_state)
                if not hf_now:
                    saved = (
                        checkpoint.save_hf(
                            accelerator, model, tokenizer, out, done, cfg.keep_folders
                        )
                        or saved
                    )
                total = done
                break
    finally:
        bar_cm.__exit__(None, None, None)
        rollout.close()
        sandboxes.__exit__(None, None, None)
        if cfg.report_to != "none":
            accelerator.end_training()
    if saved is None and accelerator.is_main_process:
        final = out / checkpoint.HF_DIR / "final"
        saved = final if final.exists() else None
    return TrainResult(out, total, saved, metrics, base_label, stopped)
