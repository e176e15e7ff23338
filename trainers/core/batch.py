"""Token-level training batch: rows of token segments, each segment tagged with a region.

A row is a sequence of segments (prompt, plan tuple, program, ...). Each segment carries a
region (NONE for context that is never trained on) and one scalar advantage that is broadcast
to its tokens. ``collate`` right-pads rows into a ``PolicyBatch`` whose per-token tensors are all
aligned with ``input_ids``: entry [b, t] describes token input_ids[b, t], predicted from the
logits at position t - 1. So position 0 can never be trained on, and advantages outside a
region are exactly zero: one loss call can mix planner and solver rows (or one row holding
both) without either region's advantage reaching the other's tokens (study Eq. cppo-loss).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import torch
from torch import Tensor


class Region(IntEnum):
    """Who a token belongs to; NONE tokens (prompts, padding) get no loss."""

    NONE = 0
    PLANNER = 1
    SOLVER = 2
    RESPONSE = 3  # single-policy trainers (GRPO, PKPO, pass@k-RL, UpSkill)


@dataclass(frozen=True)
class Segment:
    ids: tuple[int, ...]
    region: Region = Region.NONE
    advantage: float = 0.0
    # per-token log-probs the rollout engine reported when it sampled these ids (vLLM), or None
    sampling_logprobs: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Row:
    segments: tuple[Segment, ...]

    @classmethod
    def prompt_completion(
        cls,
        prompt: Sequence[int],
        completion: Sequence[int],
        region: Region,
        advantage: float | Tensor,
        sampling_logprobs: Sequence[float] | None = None,
    ) -> Row:
        lp = tuple(float(x) for x in sampling_logprobs) if sampling_logprobs is not None else None
        return cls(
            (Segment(tuple(prompt)), Segment(tuple(completion), region, float(advantage), lp))
        )

    def __len__(self) -> int:
        return sum(len(s.ids) for s in self.segments)


@dataclass(frozen=True)
class PolicyBatch:
    """(B, T) tensors aligned with input_ids. old/ref log-probs are filled in by the trainer
    (``token_logprobs`` under no_grad) before the update; ``None`` old log-probs means on-policy."""

    input_ids: Tensor
    attention_mask: Tensor
    region: Tensor
    advantages: Tensor
    old_logprobs: Tensor | None = None
    ref_logprobs: Tensor | None = None
    # the rollout engine's own log-probs of the trained tokens (vLLM), NaN where not reported
    sampling_logprobs: Tensor | None = None

    @property
    def loss_mask(self) -> Tensor:
        return (self.region != Region.NONE) & self.attention_mask.bool()

    def replace(self, **changes: Any) -> PolicyBatch:
        return dataclasses.replace(self, **changes)

    def validate(self) -> None:
        shape = self.input_ids.shape
        if self.input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (B, T), got {tuple(shape)}")
        names = ("attention_mask", "region", "advantages", "old_logprobs", "ref_logprobs")
        for name in (*names, "sampling_logprobs"):
            t = getattr(self, name)
            if t is not None and t.shape != shape:
                raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
        if bool((self.region[:, 0] != Region.NONE).any()):
            raise ValueError("position 0 has no preceding logits; it cannot be a trained token")
        if bool(((self.advantages != 0) & ~self.loss_mask).any()):
            raise ValueError("non-zero advantages outside every region (or on padding)")


def collate(rows: Sequence[Row], pad_id: int) -> PolicyBatch:
    """Right-pad rows into a batch (right padding keeps HF position ids equal to indices)."""
    if not rows:
        raise ValueError("cannot collate an empty list of rows")
    width = max(len(r) for r in rows)
    b = len(rows)
    input_ids = torch.full((b, width), pad_id, dtype=torch.long)
    attention = torch.zeros((b, width), dtype=torch.long)
    region = torch.zeros((b, width), dtype=torch.long)
    adv = torch.zeros((b, width), dtype=torch.float32)
    reported = any(s.sampling_logprobs is not None for r in rows for s in r.segments)
    sampled = torch.full((b, width), float("nan")) if reported else None
    for i, row in enumerate(rows):
        t = 0
        for seg in row.segments:
            n = len(seg.ids)
            if n and seg.region != Region.NONE and t == 0:
                raise ValueError(f"row {i}: a trained segment cannot start the row (no context)")
            input_ids[i, t : t + n] = torch.tensor(seg.ids, dtype=torch.long)
            region[i, t : t + n] = int(seg.region)
            if seg.region != Region.NONE:
                adv[i, t : t + n] = seg.advantage
            if sampled is not None and seg.sampling_logprobs is not None:
                if len(seg.sampling_logprobs) != n:
                    raise ValueError(f"row {i}: {len(seg.sampling_logprobs)} log-probs for {n} ids")
                sampled[i, t : t + n] = torch.tensor(seg.sampling_logprobs, dtype=torch.float32)
            t += n
        attention[i, :t] = 1
    return PolicyBatch(input_ids, attention, region, adv, sampling_logprobs=sampled)
