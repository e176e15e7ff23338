"""Stage 1 training: cross-entropy on planner tokens only.

Rows are (plan prompt -> target tuple); the prompt is context (Region.NONE) and the tuple is
Region.PLANNER, so the loss mask is exactly the plan region (the same batch layout the RL
stages use, which keeps one tokenisation path for SFT, warm-up and joint training).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from trainers.core.batch import PolicyBatch, Region, Row, Segment, collate
from trainers.core.loss import token_logprobs
from trainers.cppo_pipeline.sft_funnel import PLAN_PROMPT, SFTExample
from trainers.harness import DEFAULT_VERSION, GenRequest, SamplingParams, env, render
from trainers.harness import chat as chatmod


def encode_prompt(tokenizer: Any, messages: Sequence[dict[str, str]]) -> list[int]:
    """Prompt ids exactly as the rollouts encode them (chat template when there is one), so
    the SFT target follows the same context the planner is later sampled from."""
    request = GenRequest(SamplingParams(), messages=tuple(messages))
    return chatmod.encode(tokenizer, request, "auto")


def sft_rows(
    tokenizer: Any, examples: Sequence[SFTExample], k: int, version: str = ""
) -> list[Row]:
    """``version``: the run's prompt version ("" = the default), the one the planner is
    later sampled under (warm-up, joint, `cppo-bench run`)."""
    rows = []
    for ex in examples:
        messages = render(PLAN_PROMPT, ex.problem, version or DEFAULT_VERSION, n=k, n_next=k + 1)
        prompt = encode_prompt(tokenizer, messages)
        target = tokenizer.encode(ex.target, add_special_tokens=False)
        eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        rows.append(Row((Segment(tuple(prompt)), Segment(tuple(target + eos), Region.PLANNER))))
    return rows


@dataclass(frozen=True)
class SFTLayout:
    """How the SFT step uses memory, from the engine section (``TrainConfig``): micro-batches
    of ``micro_rows`` rows accumulated into one optimizer step (the same mean loss as the whole
    batch), the head over at most ``chunk`` planner positions at a time (0: every planner
    position at once), checkpointed decoder layers, and FSDP2 with CPU offload on one process
    (fp32 state and the AdamW step in host memory). Defaults: the plain loop."""

    micro_rows: int = 0  # 0 = the whole batch at once
    chunk: int = 0
    checkpointing: bool = False
    offload: bool = False

    @classmethod
    def from_engine(cls, engine: Any) -> SFTLayout:

        from trainers.engine import sharding

        # one process only: the other ranks wait in the stage barrier, so a multi-process
        # mesh would hang; several processes keep the plain layout (docs/gpu.md)
        alone = env.world_size() == 1
        return cls(
            micro_rows=engine.micro_batch_rows,
            chunk=engine.logits_chunk_tokens,
            checkpointing=engine.gradient_checkpointing,
            offload=alone and sharding.wants_offload(engine.sharding),
        )


def planner_mask(batch: PolicyBatch) -> Tensor:
    return (batch.region == Region.PLANNER) & batch.attention_mask.bool()


def sft_loss(model: nn.Module, batch: PolicyBatch, chunk: int = 0, total: int = 0) -> Tensor:
    # Eq. sft: -(1/|plan tokens|) sum_{t in plan} log q(y_t | y_<t); other tokens are masked out.
    # The head runs only at planner positions (chunked when ``chunk``); ``total``: the plan
    # tokens of the whole batch this micro-batch belongs to (its share of the mean)
    mask = planner_mask(batch)
    logp = token_logprobs(model, batch.input_ids, batch.attention_mask, mask, chunk=chunk)
    return -(logp * mask).sum() / (total or mask.sum().clamp(min=1))


@contextlib.contextmanager
def checkpointed(model: Any, on: bool) -> Iterator[None]:  # (a transformers model)
    """Checkpointed decoder layers for the duration (SFT and the generative RM's fit)."""
    if not on:
        yield
        return
    model.gradient_checkpointing_enable({"use_reentrant": False})
    try:
        yield
    finally:
        model.gradient_checkpointing_disable()


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
    layout: SFTLayout | None = None,
    save: Callable[[dict[str, Tensor] | None], None] | None = None,
) -> list[float]:
    """AdamW epochs of ``batch_size`` rows per step; ``log(step, metrics)`` per step if given.
    ``layout``: the engine's memory layout (SFTLayout). ``save(state_dict)`` is called once
    trained: None for a plain model, the gathered full weights of an offloaded one (sharded in
    place; they can only be gathered while its process group is up)."""
    from trainers.engine import sharding

    lay = layout or SFTLayout()
    device = next(model.parameters()).device
    with contextlib.ExitStack() as stack:
        if lay.offload:
            stack.enter_context(sharding.process_group("fsdp2_offload"))
            model = sharding.shard(model, device, 1, offload=True)
        stack.enter_context(checkpointed(model, lay.checkpointing))
        # built after sharding: the AdamW state lives where the shards do (host under offload)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        gen = torch.Generator().manual_seed(seed)
        model.train()
        losses: list[float] = []
        for _ in range(epochs):
            for idx in torch.randperm(len(rows), generator=gen).split(batch_size):
                chosen = [rows[i] for i in idx.tolist()]
                whole = collate(chosen, pad_id)
                total = int(planner_mask(whole).sum().clamp(min=1))
                step = lay.micro_rows if lay.micro_rows > 0 else len(chosen)
                opt.zero_grad()
                loss = 0.0
                for at in range(0, len(chosen), step):
                    part = to_device(collate(chosen[at : at + step], pad_id), device)
                    micro = sft_loss(model, part, lay.chunk, total)
                    micro.backward()
                    loss += float(micro.detach())
                grad = sharding.clip_grad_norm(list(model.parameters()), 1.0)
                opt.step()
                losses.append(loss)
                if log is not None:
                    log(len(losses), {"sft_loss": loss, "grad_norm": grad})
        model.eval()
        if save is not None:
            save(sharding.full_state_dict(model) if lay.offload else None)
    return losses
