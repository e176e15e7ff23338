"""A training step's ``StepContext``: how an algorithm generates, scores and encodes.

Under FSDP2 each process decodes (and scores log-probs for) its own number of rows, so every
policy forward here runs inside ``update.policy_inference`` (``sharding.gathered``: no
collective per decoding step; eval mode, whatever mode the update left).
``StepEnv`` is what the loop builds once per run; ``step_context`` lends it to one step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainers.engine.algorithm import Messages, StepContext
from trainers.engine.metrics import Timer
from trainers.engine.rewards import RewardFn
from trainers.engine.rollout import CONTEXT_FULL, Rollout, RolloutEngine, RolloutRequest
from trainers.harness import Problem, SamplingParams
from trainers.harness import chat as chatmod

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase


def _local(items: list[Any]) -> list[Any]:
    return list(items)


@dataclass(frozen=True)
class StepEnv:
    """The run-wide parts every step's context is made of."""

    seed: int
    prompt: Callable[[Problem], Messages]  # the direct-solve chat messages of a problem
    stop: tuple[str, ...]
    rollout: RolloutEngine
    sampling: SamplingParams
    reward: RewardFn
    policy: torch.nn.Module  # the unwrapped policy (an FSDP2 module when sharded)
    tokenizer: PreTrainedTokenizerBase
    pad_id: int
    micro_rows: int  # TrainConfig.micro_batch_rows
    chat: str  # chat mode (auto | template | plain)
    enable_thinking: bool | None
    logits_chunk: int = 0  # TrainConfig.logits_chunk_tokens
    # over every process (identity in one): StepContext.reduce_sum / gather
    reduce_sum: Callable[[torch.Tensor], torch.Tensor] = field(default=lambda t: t)
    gather: Callable[[list[Any]], list[Any]] = _local
    is_main: bool = True
    prompt_version: str = ""  # TrainConfig.prompt_version, resolved (StepContext's)


def step_context(step: int, env: StepEnv, timer: Timer) -> StepContext:
    from trainers.engine.update import completion_logprobs, policy_inference

    def logprobs(pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[torch.Tensor]:
        with policy_inference(env.policy):
            t = env.sampling.temperature
            return completion_logprobs(
                env.policy, pairs, env.pad_id, env.micro_rows, t, env.logits_chunk
            )

    def generate(reqs: Sequence[RolloutRequest]) -> list[Rollout]:
        # gathered: under FSDP each process decodes its own number of steps, collective-free;
        # eval mode: the rollout never sees the update's training mode. An engine with its
        # own weights (vLLM) leaves the policy sharded (offloaded) and as it is
        uses = getattr(env.rollout, "uses_policy", True)
        held = policy_inference(env.policy) if uses else contextlib.nullcontext()
        with timer.phase("rollout"), held:
            out = env.rollout.generate(reqs, env.sampling)
        timer.spent["gen_tokens"] = timer.spent.get("gen_tokens", 0) + sum(
            len(r.completion_ids) for r in out
        )
        overlong = sum(r.finish_reason == CONTEXT_FULL for r in out)
        timer.spent["overlong_prompts"] = timer.spent.get("overlong_prompts", 0) + overlong
        return out

    def score(rollouts: Sequence[Rollout]) -> list[Any]:
        with timer.phase("verify"):
            return env.reward(rollouts)

    def encode(req: RolloutRequest) -> list[int]:
        gen = req.gen_request(env.sampling)
        return chatmod.encode(env.tokenizer, gen, env.chat, env.enable_thinking)

    return StepContext(
        step=step,
        seed=env.seed,
        prompt=env.prompt,
        stop=env.stop,
        generate=generate,
        score=score,
        completion_logprobs=logprobs,
        encode=encode,
        reduce_sum=env.reduce_sum,
        gather=env.gather,
        is_main=env.is_main,
        prompt_version=env.prompt_version,
    )
