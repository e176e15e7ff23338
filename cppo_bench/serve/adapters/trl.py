"""A TRL reward function: `GRPOTrainer(reward_funcs=[VerifierReward(...)])`.

TRL calls ``reward_func(prompts=..., completions=..., completion_ids=..., **columns)`` with
every dataset column but the prompt as a keyword list (one entry per completion), and wants
one float per completion. The column named `label_column` (default ``tests``) holds each
row's tests (adapters/labels.py: APPS `input_output` or ours, a dict or its JSON text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cppo_bench.serve.adapters.scoring import Scorer
from cppo_bench.util.termsafe import quote


def completion_text(completion: Any) -> str:
    """A standard completion is text; a conversational one, a list of messages: the
    assistant's content, joined."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        parts = [m.get("content") for m in completion if isinstance(m, dict)]
        return "\n".join(p if isinstance(p, str) else "" for p in parts)
    raise TypeError(f"a completion is text or a list of messages, not {type(completion).__name__}")


class VerifierReward:
    """Reward 1.0 for a program that passes every test (or, `partial`, the fraction passed);
    verified by a `cppo-bench serve` at `url` ($CPPO_VERIFIER_URL) or in this process."""

    def __init__(self, url: str | Sequence[str] | None = None, *, label_column: str = "tests",
                 token: str | None = None, timeout: float = 600.0, partial: bool = False,
                 name: str = "cppo_verifier") -> None:  # fmt: skip
        self.scorer = Scorer(url, token=token, timeout=timeout, partial=partial)
        self.label_column = label_column
        self.__name__ = name  # TRL names each reward function's logged metrics by this

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 **kwargs: Any) -> list[float]:  # fmt: skip
        labels = kwargs.get(self.label_column)
        if labels is None:
            raise ValueError(
                f"VerifierReward: the dataset has no {quote(self.label_column)} column"
            )
        return self.scorer.score([completion_text(c) for c in completions], list(labels))
