"""verl's custom reward function: in the trainer config ::

    custom_reward_function.path=<this file's path>  custom_reward_function.name=compute_score
    custom_reward_function.reward_kwargs.url=http://cpu-node:8600

verl's reward managers call ``compute_score(data_source=..., solution_str=..., ground_truth=...,
extra_info=...)`` once per response (the naive and prime managers), or `compute_score_batch`
with lists (the batch manager); `reward_kwargs` arrive as keywords. `ground_truth` is the
row's tests (adapters/labels.py). Without a URL (nor $CPPO_VERIFIER_URL) it verifies here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cppo_bench.serve.adapters.scoring import shared_scorer


def compute_score(data_source: Any, solution_str: str, ground_truth: Any,
                  extra_info: Any = None, *, url: str | None = None, token: str | None = None,
                  partial: bool = False) -> float:  # fmt: skip
    return shared_scorer(url, token, partial).score([solution_str], [ground_truth])[0]


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any], extra_infos: Sequence[Any] | None = None,
                        *, url: str | None = None, token: str | None = None,
                        partial: bool = False) -> list[float]:  # fmt: skip
    """One request for the whole batch: the service verifies it in parallel."""
    return shared_scorer(url, token, partial).score(list(solution_strs), list(ground_truths))
