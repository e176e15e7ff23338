"""What a training run builds once, before its first step: the Accelerator (with the
process group's backend and time-out), the policy (dropout off), its reference, the layout
(FSDP2 by the engine, or accelerate's DDP / DeepSpeed), the optimizer and scheduler, and the
cross-process helpers a step uses (``all_reduce_sum``, ``gather``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers.engine import deepspeed_support, sharding
from trainers.engine.config import TrainConfig
from trainers.harness import env

# the oldest torch the engine has run on (2.11 and 2.13 are tested): FSDP2 keeps its parameter
# groups under another private name before 2.13 (sharding.param_groups), and older releases
# were never read; pyproject pins the same floor
MIN_TORCH = (2, 11)


def check_torch(version: str) -> None:
    """One line, before anything is built, when ``version`` is older than ``MIN_TORCH``."""
    import re

    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or (int(found[1]), int(found[2])) < MIN_TORCH:
        floor = ".".join(map(str, MIN_TORCH))
        raise ValueError(
            f"torch {version}: the training engine needs torch >= {floor} (tested on 2.11 "
            "and 2.13); install a newer torch"
        )


def accelerator(cfg: TrainConfig, out_dir: Path) -> Any:

    import torch
    from accelerate import Accelerator

    from trainers.engine.trackers import check_tracker

    check_torch(torch.__version__)  # the first thing a run does: nothing is built yet

    log_with = None if cfg.report_to == "none" else cfg.report_to
    check_tracker(cfg.report_to)  # a missing package: one line, before any model loads
    world = env.world_size()
    cuda = torch.cuda.is_available()
    # offloaded shards are host tensors: the group needs gloo beside NCCL for them
    mixed = sharding.wants_offload(cfg.sharding) and cuda and world > 1
    backend = sharding.mixed_backend() if mixed else None
    kwargs = deepspeed_support.accelerator_kwargs(cuda, cfg.dist_timeout_s, backend)
    return Accelerator(
        log_with=log_with,
        project_dir=str(out_dir),
        step_scheduler_with_optimizer=False,  # one scheduler step per optimizer step
        **kwargs,
    )


def mixed_precision(accelerator: Any) -> Any:
    """accelerate's mixed precision (``accelerate launch --mixed_precision``) as FSDP2's
    policy, for the layout the engine shards itself (accelerate applies it to DDP and
    DeepSpeed, never saw this one, and FSDP2 ran fp32 while the user asked for bf16).
    bf16: forwards and backwards in bf16 over fp32 master weights, gradients reduced in
    fp32 (the step sums them across processes: bf16 would round each one). None: "no".
    fp16 and fp8 need a loss scaler / recipe the engine's FSDP2 path has not: one line."""
    mode = str(accelerator.mixed_precision)
    if mode == "no":
        return None
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy

    if mode == "bf16":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    raise ValueError(
        f"mixed precision {mode}: the engine's FSDP2 layout runs bf16 or no mixed precision "
        "(fp16 needs a loss scaler it has not); launch with --mixed_precision bf16 or no"
    )


def all_reduce_sum(accelerator: Any) -> Callable[[Any], Any]:
    if accelerator.num_processes == 1:
        return lambda t: t

    def reduce(t: Any) -> Any:
        return accelerator.reduce(t.to(accelerator.device), reduction="sum").cpu()

    return reduce


def gather(accelerator: Any) -> Callable[[list[Any]], list[Any]]:
    """Every process's list, concatenated in process order (``StepContext.gather``)."""
    if accelerator.num_processes == 1:
        return lambda items: list(items)

    def gather(items: list[Any]) -> list[Any]:
        import torch.distributed as dist

        parts: list[Any] = [None] * accelerator.num_processes
        dist.all_gather_object(parts, list(items))
        return [x for part in parts for x in part]

    return gather


def load_policy(model: str | None, accelerator: Any) -> tuple[Any, Any, str, str]:
    """(policy, tokenizer, base-model label, folder); ``model`` None: the embedded default."""
    import torch

    from trainers.engine.update import disable_dropout
    from trainers.harness import ensure_default_model, load_model

    with accelerator.main_process_first():  # the first process builds the embedded folder
        path = str(ensure_default_model()) if model is None else model
    # every process loads at once: under ZeRO-3, zero.Init broadcasts while loading, and a
    # process held back by main_process_first would never join it (deadlock)
    policy, tokenizer, _ = load_model(path, dtype=torch.float32)
    policy.config.use_cache = False  # training forwards need no KV cache
    disable_dropout(policy)  # the update's training-mode forwards match rollout scoring
    return policy, tokenizer, model_label(model), path


def optimizer(cfg: TrainConfig, model: Any) -> tuple[Any, Any]:
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


@dataclass
class Parts:
    """What a run builds once, before its first step."""

    accelerator: Any
    model: Any  # what the optimizer steps (accelerate's wrapper, or the FSDP2 module)
    policy: Any  # the unwrapped policy
    tokenizer: Any
    optimizer: Any
    scheduler: Any
    reference: Any | None
    sharded_state: tuple[Any, Any] | None  # (model, optimizer) under FSDP2: saved per unit
    pad_id: int
    base_label: str
    model_path: str


def build(cfg: TrainConfig, model_name: str | None, accelerator: Any) -> Parts:
    """Policy, reference, layout, optimizer and scheduler, in the order sharding needs."""
    import torch

    from trainers.core.grpo import check_trainable_fp32, make_reference

    world = accelerator.num_processes
    model, tokenizer, base_label, model_path = load_policy(model_name, accelerator)
    check_trainable_fp32(model)
    if cfg.gradient_checkpointing:  # activations recomputed in backward: memory for time
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    dtypes = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
    zero3 = deepspeed_support.zero_stage(accelerator) == 3
    reference = None
    if cfg.uses_reference and not zero3:  # copied before sharding: a full, frozen replica
        reference = make_reference(model, dtypes[cfg.reference_dtype]).to(accelerator.device)
    fsdp = sharding.uses_fsdp(cfg.sharding, world)
    if fsdp:  # the engine shards (FSDP2) itself: the same path on CPU and GPU
        offload = sharding.wants_offload(cfg.sharding)
        mixed = mixed_precision(accelerator)
        model = sharding.shard(model, accelerator.device, world, offload=offload, mixed=mixed)
    # created after sharding, over the DTensor shards: under offload they and the AdamW
    # moments live in host memory, so the step runs there
    optim, scheduler = optimizer(cfg, model)
    deepspeed_support.fill_config(accelerator, cfg.micro_batch_rows, cfg.max_grad_norm)
    if fsdp:
        scheduler = accelerator.prepare(scheduler)
    else:
        model, optim, scheduler = accelerator.prepare(model, optim, scheduler)
    if cfg.uses_reference and zero3:  # after prepare: accelerate has resolved the config's "auto"s
        reference = deepspeed_support.reference(
            model_path, dtypes[cfg.reference_dtype], accelerator
        )
    pad = tokenizer.pad_token_id
    pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)
    return Parts(
        accelerator,
        model,
        accelerator.unwrap_model(model),
        tokenizer,
        optim,
        scheduler,
        reference,
        (model, optim) if fsdp else None,
        pad_id,
        base_label,
        model_path,
    )


def model_label(model: str | None) -> str:
    """The base-model label a run records (and `cppo-bench run --base-model` takes): the
    embedded default's name, a local folder's resolved path, or the hub id as given. Every
    trainer and every evaluation hint spells it this one way, so report columns never split."""
    from trainers.harness import DEFAULT_MODEL

    if model is None:
        return DEFAULT_MODEL
    local = Path(model).expanduser()
    return str(local.resolve()) if local.exists() else model
