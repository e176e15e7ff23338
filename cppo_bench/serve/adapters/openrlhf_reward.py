"""OpenRLHF's custom reward function, for a service that needs a token: ::

    --remote_rm_url /path/to/cppo_bench/serve/adapters/openrlhf_reward.py  --label_key tests

OpenRLHF's own HTTP reward client (`--remote_rm_url http://host:8600/get_reward`) sends no
`Authorization` header, so it reaches only a token-less (localhost) service. Given a `.py`
path instead, OpenRLHF loads the file and calls ``reward_func(queries, prompts, labels)`` in
its workers: this one sends the batch through `cb.VerifierClient`, which carries the token
from where every client reads it ($CPPO_SERVE_TOKEN, serve.config.env_token), to the URL(s)
in $CPPO_VERIFIER_URL (without one it verifies in the calling process). The reply is what
OpenRLHF reads: ``rewards``, ``scores`` and ``extra_logs``, tensors of one value per query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cppo_bench.serve.adapters.labels import response_of
from cppo_bench.serve.adapters.scoring import shared_scorer


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any],
                **kwargs: Any) -> dict[str, Any]:  # fmt: skip
    import torch  # (lazy: OpenRLHF's workers have it; importing this file needs none)

    if not len(queries) == len(prompts) == len(labels):
        raise ValueError(f"{len(queries)} queries, {len(prompts)} prompts and {len(labels)} "
                         "labels: expected one of each per sample")  # fmt: skip
    scorer = shared_scorer(None, None, partial=False)
    codes = [response_of(q, p) for q, p in zip(queries, prompts, strict=True)]
    results = scorer.results(codes, list(labels))
    rewards = torch.tensor([scorer.reward(r) for r in results], dtype=torch.float32)
    fraction = torch.tensor([r.tests_passed / r.tests_total if r.tests_total else 0.0
                             for r in results], dtype=torch.float32)  # fmt: skip
    return {"rewards": rewards, "scores": rewards,
            "extra_logs": {"tests_passed_fraction": fraction}}  # fmt: skip
