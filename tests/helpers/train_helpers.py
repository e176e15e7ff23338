"""Helpers for the trainer tests: a tiny random Llama with the embedded model's tokenizer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# the tiny Llama lives beside the smoke test's other fixtures (benchmarks/fixtures/)
from benchmarks.fixtures.tiny_models import tiny_model_dir  # noqa: E402, F401 - re-exported


def uneven_generation(policy: Any, plain: Any, tok: Any, rank: int) -> dict[str, Any]:
    """The sharded-decoding check of the 2-process probes (FSDP2, ZeRO-3): rank 0 decodes three
    requests of up to 6 tokens, rank 1 one of up to 2, so the processes run different numbers
    of steps (a collective per step would hang). The sharded ``policy`` generates inside
    ``sharding.gathered``; ``plain`` (an unsharded copy) must give the same completions."""
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine import sharding
    from trainers.engine.rollout import HFRollout, RolloutRequest

    prob = Problem("toy", "p", "s", (Test(input="", output=""),), "lcb")
    n, max_tokens = (3, 6) if rank == 0 else (1, 2)
    reqs = [
        RolloutRequest(prob, seed=100 * rank + i, prompt="say one two three " * (i + 1))
        for i in range(n)
    ]
    sampling = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=max_tokens)
    with sharding.gathered(policy):
        got = HFRollout(policy, tok, batch_size=4).generate(reqs, sampling)
    want = HFRollout(plain, tok, batch_size=4).generate(reqs, sampling)
    return {
        "same_as_unsharded": [g.completion_ids for g in got] == [w.completion_ids for w in want],
        "lengths": [len(g.completion_ids) for g in got],
    }


def one_process_accelerator() -> Any:
    """What ``update.policy_update`` asks of an accelerator, for one plain CPU process: the
    reference layout the 2-process probes compare their update with."""
    import contextlib
    from types import SimpleNamespace

    import torch

    return SimpleNamespace(
        device=torch.device("cpu"),
        num_processes=1,
        backward=lambda loss: loss.backward(),
        no_sync=lambda m: contextlib.nullcontext(),
        clip_grad_norm_=torch.nn.utils.clip_grad_norm_,
    )


def all_reduce_copy(t: Any) -> Any:
    """A sum over every process of a copy of ``t`` (the update's ``all_reduce_sum``)."""
    import torch.distributed as dist

    t = t.clone()
    dist.all_reduce(t)
    return t
