"""Trainers for the CPPO study: CPPO, PKPO, UpSkill, pass@K-RL (algorithm core in trainers.core).

``from trainers import train``: the one front door (trainers.api.train; `cppo-bench train`
calls it), imported on first use so ``import trainers`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainers.harness import quote

__all__ = ["train"]

if TYPE_CHECKING:
    from trainers.api import train


def __getattr__(name: str) -> Any:
    if name == "train":
        from trainers.api import train

        return train
    raise AttributeError(f"module 'trainers' has no attribute {quote(name)}")
