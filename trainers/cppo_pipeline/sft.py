"""Stage 1 training: cross-entropy on planner tokens only.

Rows are (plan prompt -> target tuple); the prompt is context (Region.NONE) and the tuple is
Region.PLANNER, so the loss mask is exactly the plan region (the same batch layout the RL
stages use, which keeps one tokenisation path for SFT, warm-up and joint training).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from cppo_bench.backends import GenRequest, SamplingParams
from cppo_bench.backends import chat as chatmod
from cppo_bench.prompts import render
from trainers.core.batch import PolicyBatch, Region, Row, Segment, collate
from trainers.core.loss import token_logprobs
from trainers.cppo_pipeline.sft_funnel import PLAN_PROMPT, SFTExample


def encode_prompt(tokenizer: Any, messages: Sequence[dict[str, str]]) -> list[int]:
    """Prompt ids exactly as the rollouts encode them (chat template when there is one), so
    the SFT target follows the same context the planner is later sampled from."""
    request = GenRequest(SamplingParams(), messages=tuple(messages))
    return chatmod.encode(tokenizer, request, "auto")


def sft_rows(tokenizer: Any, examples: Sequence[SFTExample], k: int) -> list[Row]:
    rows = []
    for ex in examples:
        prompt = encode_prompt(tokenizer, render(PLAN_PROMPT, ex.problem, n=k, n_next=k + 1))
        target = tokenizer.encode(ex.target, add_special_tokens=False)
        eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        rows.append(Row((Segment(tuple(prompt)), Segment(tuple(target + eos), Region.PLANNER))))
    return rows


def sft_loss(model: nn.Module, batch: PolicyBatch) -> Tensor:
    # Eq. sft: -(1/|plan tokens|) sum_{t in plan} log q(y_t | y_<t); other tokens are masked out
    mask = (batch.region == Region.PLANNER) & batch.attention_mask.bool()
    logp = token_logprobs(model, batch.input_ids, batch.attention_mask)
    return -(logp * mask).sum() / mask.sum().clamp(min=1)


def to_device(batch: PolicyBatch, device: Any) -> PolicyBatch:
    """The batch's tensors on the model's device (collate builds them on the CPU)."""
    moved = {
        k: getattr(batch, k).to(device)
        for k in ("input_ids", "attention_mask", "region", "advantages")
        if getattr(batch, k) is not None
    }
    return batch.replace(**moved)


def train_sft(
    model: nn.Module,
    rows: Sequence[Row],
    pad_id: int,
    *,
    epochs: int = 1,
    batch_size: int = 4,
    lr: float = 1e-5,
    seed: int = 0,
    log: Any = None,
) -> list[float]:
    """Plain AdamW epochs; ``log(step, metrics)`` is called per step if given."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    model.train()
    losses = []
    step = 0
    for _ in range(epochs):
        for idx in torch.randperm(len(rows), generator=gen).split(batch_size):
            batch = to_device(collate([rows[i] for i in idx.tolist()], pad_id), device)
            loss = sft_loss(model, batch)
            opt.zero_grad()
            loss.backward()
            grad = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            opt.step()
            losses.append(float(loss.detach()))
            step += 1
            if log is not None:
                log(step, {"sft_loss": losses[-1], "grad_norm": grad})
    model.eval()
    return losses
