"""The hashed n-gram classifier behind the fast ``ngram`` reward model (pure model code).

Two bags of hashed word uni- and bigrams (problem, tuple) feed a small MLP whose output is the
logit of p(valid | problem, tuple). Training, thresholds (J = 1{p >= tau}), the acceptance rule,
saving and loading are the one gate stack of trainers.cppo_pipeline.reward_model, shared with
the generative verifier.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

_WORD = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class GateConfig:
    """The classifier's shape (its training settings are the reward model's RMConfig)."""

    buckets: int = 1 << 14
    dim: int = 16
    hidden: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        # a saved shape comes from a file: bound it before any tensor is allocated
        for name, top in (("buckets", 1 << 22), ("dim", 4096), ("hidden", 4096)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise ValueError(f"gate {name} must be an integer in [1, {top}]")


def hashed_ngrams(text: str, buckets: int) -> list[int]:
    """Word uni- and bigrams hashed with crc32 (stable across processes, unlike hash())."""
    words = _WORD.findall(text.lower())
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    return [zlib.crc32(g.encode()) % buckets for g in grams]


def _bags(texts: Sequence[str], buckets: int) -> tuple[Tensor, Tensor]:
    ids: list[int] = []
    offsets: list[int] = []
    for text in texts:
        offsets.append(len(ids))
        ids.extend(hashed_ngrams(text, buckets))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


class GateClassifier(nn.Module):
    def __init__(self, config: GateConfig) -> None:
        super().__init__()
        self.config = config
        self.problem_bag = nn.EmbeddingBag(config.buckets, config.dim, mode="mean")
        self.plan_bag = nn.EmbeddingBag(config.buckets, config.dim, mode="mean")
        self.head = nn.Sequential(
            nn.Linear(2 * config.dim, config.hidden), nn.ReLU(), nn.Linear(config.hidden, 1)
        )

    def forward(self, problems: Sequence[str], plans: Sequence[str]) -> Tensor:
        # Eq. gate-logit: logit = MLP([bag(problem); bag(tuple)])
        p_ids, p_off = _bags(problems, self.config.buckets)
        s_ids, s_off = _bags(plans, self.config.buckets)
        x = torch.cat([self.problem_bag(p_ids, p_off), self.plan_bag(s_ids, s_off)], dim=-1)
        logits: Tensor = self.head(x)
        return logits.squeeze(-1)
