"""A training step's ``StepContext``: how an algorithm generates, scores and encodes.

Under FSDP2 each process decodes (and scores log-probs for) its own number of rows, so every
policy forward here runs inside ``sharding.gathered``: no collective per decoding step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from cppo_bench.backends import chat as chatmod
from trainers.engine import sharding
from trainers.engine.algorithm import StepContext
from trainers.engine.metrics import Timer
from trainers.engine.rewards import RewardFn
from trainers.engine.rollout import CONTEXT_FULL, Rollout, RolloutRequest


def step_context(
    step: int,
    spec: Any,  # loop.RunSpec
    prompt_fn: Any,
    stop: tuple[str, ...],
    rollout: Any,
    sampling: Any,
    reward_fn: RewardFn,
    timer: Timer,
    policy: Any,
    tokenizer: Any,
    pad_id: int,
    micro: int,
    chat: tuple[str, bool | None],  # (chat mode, enable_thinking)
    logits_chunk: int = 0,  # TrainConfig.logits_chunk_tokens
) -> StepContext:
    from trainers.engine.update import completion_logprobs

    def logprobs(pairs: Any) -> Any:
        with sharding.gathered(policy):
            t = sampling.temperature
            return completion_logprobs(policy, pairs, pad_id, micro, t, logits_chunk)

    def generate(reqs: Sequence[RolloutRequest]) -> list[Rollout]:
        # gathered: under FSDP each process decodes its own number of steps, collective-free;
        # an engine with its own weights (vLLM) leaves the policy sharded (offloaded)
        gather = getattr(rollout, "uses_policy", True)
        held = sharding.gathered(policy) if gather else contextlib.nullcontext()
        with timer.phase("rollout"), held:
            out = rollout.generate(reqs, sampling)
        timer.spent["gen_tokens"] = timer.spent.get("gen_tokens", 0) + sum(
            len(r.completion_ids) for r in out
        )
        overlong = sum(r.finish_reason == CONTEXT_FULL for r in out)
        timer.spent["overlong_prompts"] = timer.spent.get("overlong_prompts", 0) + overlong
        return out

    def score(rollouts: Sequence[Rollout]) -> list[Any]:
        with timer.phase("verify"):
            return reward_fn(rollouts)

    return StepContext(
        step=step,
        seed=spec.seed,
        prompt=prompt_fn,
        stop=stop,
        generate=generate,
        score=score,
        completion_logprobs=logprobs,
        encode=lambda req: chatmod.encode(tokenizer, req.gen_request(sampling), *chat),
    )
