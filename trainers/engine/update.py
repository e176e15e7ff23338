"""The update phase: rows -> micro-batches -> one optimizer step of the shared policy loss.

Exactness across layouts: every micro-batch's loss is divided by the count of the whole
*global* batch (trained tokens for token-mean; ``aggregation_count``), all-reduced over the
processes before the first backward, and multiplied by the number of processes (DDP averages
gradients). Summed over micro-batches and processes that is the gradient of the loss of the
global batch taken at once, so 1 process and N processes, or any micro-batch size, take the
same step (to float round-off). Only the last micro-batch synchronises gradients
(``no_sync`` before it), so processes may hold different numbers of rows.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainers.core.batch import PolicyBatch, Row, Segment, collate
from trainers.core.grpo import aggregation_count
from trainers.core.loss import LossConfig, frozen_logprobs, policy_loss, token_logprobs


@dataclass
class UpdateResult:
    grad_norm: float
    loss: dict[str, float]  # LossDiagnostics averaged over the global batch's trained tokens
    tokens: int  # tokens (prompt + completion) forwarded, this process


def micro_batches(rows: Sequence[Row], size: int, pad_id: int) -> list[PolicyBatch]:
    if not rows:  # nothing to train on here: one row without trained tokens keeps DDP in step
        rows = [Row((Segment((pad_id, pad_id)),))]
    return [collate(rows[i : i + size], pad_id) for i in range(0, len(rows), size)]


def _to(batch: PolicyBatch, device: Any) -> PolicyBatch:
    return batch.replace(**{
        k: getattr(batch, k).to(device)
        for k in ("input_ids", "attention_mask", "region", "advantages")
    })


@torch.no_grad()
def completion_logprobs(
    model: Any, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int, size: int
) -> list[torch.Tensor]:
    """Per-token log-probs of each completion after its prompt (no gradient)."""
    device = next(model.parameters()).device
    out: list[torch.Tensor] = []
    for i in range(0, len(pairs), size):
        chunk = pairs[i : i + size]
        rows = [Row((Segment(tuple(p)), Segment(tuple(c)))) for p, c in chunk]
        batch = collate(rows, pad_id)
        lp = token_logprobs(model, batch.input_ids.to(device), batch.attention_mask.to(device))
        for j, (p, c) in enumerate(chunk):
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
    device = accelerator.device
    batches = [_to(b, device) for b in micro_batches(rows, micro_rows, pad_id)]
    if reference is not None and loss_config.beta != 0:
        batches = [b.replace(ref_logprobs=frozen_logprobs(reference, b)) for b in batches]
    if old_logprobs is not None:
        batches = [b.replace(old_logprobs=o.to(device)) for b, o in zip(batches, old_logprobs,
                                                                       strict=True)]
    local = sum(aggregation_count(b.loss_mask, loss_config.aggregation) for b in batches)
    total = float(all_reduce_sum(torch.tensor([local], dtype=torch.float64))[0])
    scale = float(accelerator.num_processes)
    sums: dict[str, float] = {}
    weight = 0.0
    tokens = 0
    for i, batch in enumerate(batches):
        last = i == len(batches) - 1
        sync = contextlib.nullcontext() if last else accelerator.no_sync(model)
        with sync:
            loss, diag = policy_loss(model, batch, loss_config, denominator=max(total, 1.0))
            accelerator.backward(loss * scale)
        n = float(batch.loss_mask.sum())
        weight += n
        tokens += int(batch.attention_mask.sum())
        for k, v in diag.as_dict().items():
            if not k.startswith("tokens/") and k not in ("loss", "policy_loss"):
                sums[k] = sums.get(k, 0.0) + v * n
        sums["loss"] = sums.get("loss", 0.0) + float(loss.detach())  # already a share of the global loss
    norm = accelerator.clip_grad_norm_(
        model.parameters(), max_grad_norm if max_grad_norm > 0 else math.inf
    )
    if on_before_step is not None:
        on_before_step()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    keys = sorted(sums)
    reduced = all_reduce_sum(torch.tensor([*(sums[k] for k in keys), weight], dtype=torch.float64))
    w = max(float(reduced[-1]), 1.0)
    loss_stats = {k: float(v) / (1.0 if k == "loss" else w)
                  for k, v in zip(keys, reduced[:-1].tolist(), strict=True)}
    return UpdateResult(float(norm), loss_stats, tokens)


@torch.no_grad()
def old_policy_logprobs(model: Any, rows: Sequence[Row], micro_rows: int, pad_id: int,
                        device: Any) -> list[torch.Tensor]:
    """Log-probs of the rollout policy, fixed before the first of several updates."""
    return [frozen_logprobs(model, _to(b, device))
            for b in micro_batches(rows, micro_rows, pad_id)]
