"""The fast named alternative to the generative verifier (``--rm ngram``).

The hashed n-gram classifier of trainers.core.gate reads two bags of words, so it cannot see
how the methods relate to the problem or to each other: a method lifted from another problem
or one idea written twice look like any other tuple. Two lexical features close that gap:
the smallest share of a method's content words found in the statement (off-topic / foreign
methods) and the largest word overlap between two methods (reworded duplicates). A linear
layer adds them to the classifier's logit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch
from torch import Tensor, nn

from trainers.core.gate import GateClassifier, GateConfig
from trainers.cppo_pipeline.negatives import LabelledTuple

_WORD = re.compile(r"[a-z][a-z0-9]+")
FILE = "ngram.pt"


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def lexical_features(item: LabelledTuple) -> list[float]:
    # Eq. lexical: [min_i |W(s_i) & W(x)| / |W(s_i)|, max_{i<j} Jaccard(W(s_i), W(s_j))]
    vocab = _words(item.problem.statement)
    sets = [_words(p) for p in item.plans if p.strip()]
    on_topic = min((len(w & vocab) / len(w) for w in sets if w), default=0.0)
    dup = max(
        (len(a & b) / len(a | b) for i, a in enumerate(sets) for b in sets[i + 1 :] if a | b),
        default=0.0,
    )
    return [on_topic, dup]


class NgramVerifier(nn.Module):
    def __init__(self, config: GateConfig) -> None:
        super().__init__()
        self.gate = GateClassifier(config)
        self.lexical = nn.Linear(2, 1)

    def forward(self, items: Sequence[LabelledTuple]) -> Tensor:
        base = self.gate([it.problem.statement for it in items], [it.text for it in items])
        feats = torch.tensor([lexical_features(it) for it in items], dtype=torch.float32)
        return base + self.lexical(feats).squeeze(-1)


class NgramRM:
    kind = "ngram"

    def __init__(self, module: NgramVerifier) -> None:
        self.module = module

    def logits(self, items: Sequence[LabelledTuple]) -> Tensor:
        return self.module(items)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        payload = {
            "config": asdict(self.module.gate.config),
            "state_dict": self.module.state_dict(),
        }
        torch.save(payload, folder / FILE)


def create(seed: int) -> NgramRM:
    torch.manual_seed(seed)
    return NgramRM(NgramVerifier(GateConfig(seed=seed)))


def load(folder: Path) -> NgramRM:
    payload = torch.load(folder / FILE, map_location="cpu", weights_only=True)
    module = NgramVerifier(GateConfig(**payload["config"]))
    module.load_state_dict(payload["state_dict"])
    return NgramRM(module.eval())
