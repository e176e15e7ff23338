"""The update phase: rows -> micro-batches -> one optimizer step of the shared policy loss.

Exactness across layouts: every micro-batch's loss is divided by the count of the whole
*global* batch (trained tokens for token-mean; ``aggregation_count``), all-reduced over the
processes before the first backward, and multiplied by the number of processes (DDP averages
gradients). Summed over micro-batches and processes that is the gradient of the loss of the
global batch taken at once, so 1 process and N processes, or any micro-batch size, take the
same step (to float round-off). Only the last micro-batch synchronises gradients
(``no_sync`` before it), so processes may hold different numbers of rows.

Every log-prob here (reference, old policy, UpSkill's MI scoring) is taken at the sampling
temperature ``loss_config.temperature``, like the policy's own inside ``policy_loss``, and
with the same ``logits_chunk_tokens`` (the LM head over chunks of completion tokens).

Training mode: ``from_pretrained`` leaves the policy in eval mode, and transformers runs
gradient checkpointing only in training mode (``self.gradient_checkpointing and
self.training``), so ``policy_update`` is the one place the policy is put in training mode,
for the update only, and ``policy_inference`` the one block every other policy forward runs
in (rollouts, no-grad scoring): gathered, in eval mode. Both restore each module's own mode
afterwards, not the mode of the module they were handed: under DDP or DeepSpeed that is the
wrapper, which is in training mode while the policy inside is not, and restoring the
wrapper's flag recursively left the policy in training mode, where transformers 5.16-5.19's
checkpointed layers drop the KV cache, so the next hf rollout failed (issue 43). Dropout is switched off
once at load (``disable_dropout``, as TRL's ``disable_dropout`` does): a training-mode
forward then gives the same log-probs as the eval-mode rollout scoring, so the first PPO
ratio is exactly 1.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainers.core.batch import PolicyBatch, Region, Row, Segment, collate
from trainers.core.grpo import aggregation_count
from trainers.core.loss import LossConfig, frozen_logprobs, policy_loss
from trainers.engine import deepspeed_support, sharding


def disable_dropout(model: Any) -> None:
    """Every dropout of ``model`` off: ``nn.Dropout`` modules at p = 0 and the attention
    modules' ``attention_dropout`` (HF applies it only in training mode) at 0.0."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(getattr(module, "attention_dropout", None), float):
            module.attention_dropout = 0.0


@contextlib.contextmanager
def module_modes(model: Any, training: bool) -> Iterator[None]:
    """Every module of ``model`` in training (or eval) mode for the block, then each back in
    the exact mode it had (``model.train(was)`` would give every module the outer one's)."""
    modes = [(m, m.training) for m in model.modules()]
    model.train(training)
    try:
        yield
    finally:
        for module, was in modes:
            module.training = was


def training_mode(model: Any) -> contextlib.AbstractContextManager[None]:
    """``model`` in training mode for the block (gradient checkpointing runs only there)."""
    return module_modes(model, True)


@contextlib.contextmanager
def policy_inference(model: Any) -> Iterator[None]:
    """THE block every policy forward outside the update runs in (rollouts, no-grad
    scoring): its shards gathered (``sharding.gathered``: processes may run different
    numbers of forwards) and every module in eval mode, each module's own mode restored
    after. Give it the unwrapped policy, or the wrapper: every module inside is covered."""
    with sharding.gathered(model), module_modes(model, False):
        yield


@dataclass
class UpdateResult:
    grad_norm: float
    loss: dict[str, float]  # LossDiagnostics averaged over the global batch's trained tokens
    tokens: int  # tokens (prompt + completion) forwarded, this process
    reference_s: float = 0.0  # seconds spent on the frozen reference's log-probs


def micro_batches(rows: Sequence[Row], size: int, pad_id: int) -> list[PolicyBatch]:
    if not rows:  # nothing to train on here: one row without trained tokens keeps DDP in step
        rows = [Row((Segment((pad_id, pad_id)),))]
    return [collate(rows[i : i + size], pad_id) for i in range(0, len(rows), size)]


def _padding(count: int, pad_id: int, device: Any) -> list[PolicyBatch]:
    """Micro-batches without trained tokens that bring this process to the largest count of
    any process (FSDP2, ZeRO-3: a process with fewer rows would wait in a collective forever;
    the reference's forwards under ZeRO-3 too). The count travels on ``device``: an
    NCCL-only process group cannot reduce a CPU tensor."""
    import torch.distributed as dist

    most = torch.tensor([count], dtype=torch.int64, device=device)
    dist.all_reduce(most, op=dist.ReduceOp.MAX)
    return micro_batches([], 1, pad_id) * (int(most[0]) - count)


def _to(batch: PolicyBatch, device: Any) -> PolicyBatch:
    keys = ("input_ids", "attention_mask", "region", "advantages", "sampling_logprobs")
    return batch.replace(
        **{k: getattr(batch, k).to(device) for k in keys if getattr(batch, k) is not None}
    )


@torch.no_grad()
def completion_logprobs(
    model: Any,
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    pad_id: int,
    size: int,
    temperature: float = 1.0,
    chunk: int = 0,
) -> list[torch.Tensor]:
    """Per-token log-probs of each completion after its prompt (no gradient), at ``temperature``;
    ``chunk``: TrainConfig.logits_chunk_tokens (the head over that many tokens at a time)."""
    device = sharding.compute_device(model)  # offloaded shards live on the host
    out: list[torch.Tensor] = []
    for i in range(0, len(pairs), size):
        group = pairs[i : i + size]
        rows = [Row.prompt_completion(p, c, Region.RESPONSE, 0.0) for p, c in group]
        lp = frozen_logprobs(model, _to(collate(rows, pad_id), device), temperature, chunk)
        for j, (p, c) in enumerate(group):
            out.append(lp[j, len(p) : len(p) + len(c)].float().cpu())
    return out


def policy_update(
    accelerator: Any,
    model: Any,
    reference: Any | None,
    optimizer: Any,
    rows: Sequence[Row],
    *,
    loss_config: LossConfig,
    micro_rows: int,
    pad_id: int,
    max_grad_norm: float,
    all_reduce_sum: Callable[[torch.Tensor], torch.Tensor],
    on_before_step: Callable[[], None] | None = None,
    old_logprobs: list[torch.Tensor] | None = None,
) -> UpdateResult:
    with training_mode(model):
        device = accelerator.device
        batches = [_to(b, device) for b in micro_batches(rows, micro_rows, pad_id)]
        if sharding.collective_forward(model):  # FSDP2, ZeRO-3: the same count everywhere
            batches += [_to(b, device) for b in _padding(len(batches), pad_id, device)]
        started = time.perf_counter()
        t, chunk = loss_config.temperature, loss_config.logits_chunk_tokens
        if reference is not None and loss_config.uses_reference:
            batches = [
                b.replace(ref_logprobs=frozen_logprobs(reference, b, t, chunk)) for b in batches
            ]
        reference_s = time.perf_counter() - started
        if old_logprobs is not None:
            batches = [
                b.replace(old_logprobs=o.to(device))
                for b, o in zip(batches, old_logprobs, strict=True)
            ]
        local = sum(aggregation_count(b.loss_mask, loss_config.aggregation) for b in batches)
        total = float(all_reduce_sum(torch.tensor([local], dtype=torch.float64))[0])
        scale = float(accelerator.num_processes)
        sums: dict[str, float] = {"sampler_gap_sum": 0.0, "sampler_tokens": 0.0}
        weight = 0.0
        tokens = 0
        if on_before_step is not None:  # weights do not change until the step: snapshot them now
            on_before_step()  # (under DeepSpeed the engine steps inside the last backward)
        for i, batch in enumerate(batches):
            last = i == len(batches) - 1
            sync = contextlib.nullcontext() if last else accelerator.no_sync(model)
            deepspeed_support.micro_batch_boundary(accelerator, last)  # one engine step per update
            with sync:
                loss, diag = policy_loss(model, batch, loss_config, denominator=max(total, 1.0))
                accelerator.backward(loss * scale)
            n = float(batch.loss_mask.sum())
            weight += n
            tokens += int(batch.attention_mask.sum())
            for k, v in diag.as_dict().items():
                skip = ("loss", "policy_loss", "sampler_logp_gap")
                if not k.startswith("tokens/") and k not in skip:
                    sums[k] = sums.get(k, 0.0) + v * n
            # summed, not token-weighted: every process sends both keys, so the all-reduce lines up
            sums["sampler_gap_sum"] += diag.sampler_gap_sum
            sums["sampler_tokens"] += diag.sampler_tokens
            # already a share of the global loss
            sums["loss"] = sums.get("loss", 0.0) + float(loss.detach())
        if sharding.is_fsdp2(model):
            norm = sharding.clip_grad_norm(list(model.parameters()), max_grad_norm)
        else:
            norm = accelerator.clip_grad_norm_(
                model.parameters(), max_grad_norm if max_grad_norm > 0 else math.inf
            )
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        keys = sorted(sums)
        reduced = all_reduce_sum(
            torch.tensor([*(sums[k] for k in keys), weight], dtype=torch.float64)
        )
        w = max(float(reduced[-1]), 1.0)
        totals = dict(zip(keys, reduced[:-1].tolist(), strict=True))
        gap_sum, gap_n = totals.pop("sampler_gap_sum"), totals.pop("sampler_tokens")
        loss_stats = {k: float(v) / (1.0 if k == "loss" else w) for k, v in totals.items()}
        if gap_n > 0:  # mean |logp_sampler - logp_policy| over the tokens the engine scored
            loss_stats["sampler_logp_gap"] = gap_sum / gap_n
        return UpdateResult(float(norm), loss_stats, tokens, reference_s)


@torch.no_grad()
def old_policy_logprobs(
    model: Any,
    rows: Sequence[Row],
    micro_rows: int,
    pad_id: int,
    device: Any,
    temperature: float = 1.0,
    chunk: int = 0,
) -> list[torch.Tensor]:
    """Log-probs of the rollout policy at the sampling temperature, fixed before the first of
    several updates; ``chunk``: TrainConfig.logits_chunk_tokens."""
    batches = micro_batches(rows, micro_rows, pad_id)
    return [frozen_logprobs(model, _to(b, device), temperature, chunk) for b in batches]
