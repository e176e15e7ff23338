"""Rollouts: generate completions for a step's requests and keep their token ids.

A ``RolloutRequest`` is one sample to draw: the problem, the prompt (chat messages or a plain
string), its own seed, and a ``kind`` (the algorithm's label for what the row is: "sample",
"skill", and for CPPO "planner" / "solver"), a ``group`` (the advantage group it belongs to)
and free ``meta`` (e.g. the UpSkill skill index). A ``Rollout`` adds the prompt and completion
token ids the policy saw and wrote, so the update trains on exactly those tokens (re-tokenising
the decoded text would not give them back).

Engines (by name in ``trainers.engine.rollout_engines.ROLLOUT_ENGINES``):

* ``hf``: the policy itself generates through the harness's hf backend (per-request seeds,
  so a rollout does not depend on which process or batch drew it); nothing to sync.
* ``vllm``: a colocated vLLM engine (``trainers.engine.rollout_vllm``) that receives the new
  weights in place after every optimizer step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainers.harness import GenRequest, HFBackend, Problem, SamplingParams, close_fence
from trainers.harness import chat as chatmod


@dataclass(frozen=True)
class RolloutRequest:
    problem: Problem
    seed: int
    messages: tuple[dict[str, str], ...] | None = None
    prompt: str | None = None
    kind: str = "sample"  # what the row is, for the algorithm (CPPO: planner / solver)
    group: str = ""  # advantage group (default: the problem uid)
    meta: Mapping[str, Any] = field(default_factory=dict)
    stop: tuple[str, ...] = ()

    def gen_request(self, sampling: SamplingParams) -> GenRequest:
        params = SamplingParams(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            seed=self.seed,
            stop=self.stop,
        )
        return GenRequest(params=params, messages=self.messages, prompt=self.prompt, tag=self.kind)


@dataclass(frozen=True)
class Rollout:
    request: RolloutRequest
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    text: str  # the completion as the verifier sees it (a fence cut by the stop re-closed)
    finish_reason: str
    # the engine's log-prob of each completion token at the sampling temperature (vllm); None
    # when the engine is the policy itself (hf: nothing to compare)
    sampling_logprobs: tuple[float, ...] | None = None


class RolloutEngine(Protocol):
    # whether generate() runs the policy's own forward: then a sharded policy is gathered
    # around it (context.py); an engine with its own weights (vLLM) needs no full policy
    # there, which under offload saves the fp32 policy's whole size on the GPU while it samples
    uses_policy: bool

    def generate(
        self, requests: Sequence[RolloutRequest], sampling: SamplingParams
    ) -> list[Rollout]: ...

    def sleep(self) -> None:
        """Free what the engine holds on the device until the next ``sync``: called once a
        step, after its last rollout and before the update (vLLM's sleep mode; a no-op for
        an engine that is the policy itself). ``generate`` before that ``sync`` is an error."""
        ...

    def sync(self, model: Any) -> None:
        """Make the engine sample from ``model``'s current weights (after an optimizer step)."""
        ...

    def close(self) -> None: ...


# The finish reason of a rollout that was never decoded because its prompt alone fills the
# model's context: an empty completion (reward 0, no token trained), counted in the step's
# ``overlong_prompts`` metric instead of failing the run (hf) or the batch (vLLM raises).
CONTEXT_FULL = "context"


def fits_context(prompt_len: int, context: int | None) -> bool:
    """Whether at least one token can be generated after a prompt of ``prompt_len`` tokens."""
    return context is None or prompt_len < context


def _finish(
    req: RolloutRequest,
    prompt: Sequence[int],
    out: Sequence[int],
    text: str,
    why: str,
    logprobs: Sequence[float] | None = None,
) -> Rollout:
    text = close_fence(text) if req.stop and why == "stop" else text
    lp = tuple(float(x) for x in logprobs) if logprobs is not None else None
    return Rollout(req, tuple(int(t) for t in prompt), tuple(int(t) for t in out), text, why, lp)


class _TokenHF(HFBackend):
    """The hf backend, also reporting the prompt and completion ids of every result."""

    def _result(self, row: Any) -> Any:
        result = super()._result(row)
        result.extra["prompt_ids"] = list(row.prompt)
        result.extra["completion_ids"] = list(row.out)  # with the EOS: it is trained on too
        return result


class HFRollout:
    """The policy generates its own rollouts (CPU, or a GPU without vLLM)."""

    uses_policy = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int = 8,
        chat: str = "auto",
        enable_thinking: bool | None = False,
    ):
        from trainers.engine.sharding import compute_device

        device = str(compute_device(model))  # offloaded (FSDP2) shards live on the host
        self.backend = _TokenHF(
            model,
            tokenizer,
            "policy",
            device=device,
            batch_size=batch_size,
            chat=chat,
            enable_thinking=enable_thinking,
        )

    def generate(
        self, requests: Sequence[RolloutRequest], sampling: SamplingParams
    ) -> list[Rollout]:
        gen = [r.gen_request(sampling) for r in requests]
        results = self.backend.generate(gen)
        out = []
        for req, g, res in zip(requests, gen, results, strict=True):
            if "prompt_ids" not in res.extra:  # not decoded: the prompt fills the context
                hf = self.backend
                prompt = chatmod.encode(hf.tokenizer, g, hf.chat, hf.enable_thinking)
                why = CONTEXT_FULL if res.finish_reason == "error" else res.finish_reason
                out.append(_finish(req, prompt, (), "", why))
                continue
            ids = (res.extra["prompt_ids"], res.extra["completion_ids"])
            out.append(_finish(req, *ids, res.text, res.finish_reason))
        return out

    def sleep(self) -> None:
        pass  # the policy is the engine: the update needs its weights

    def sync(self, model: Any) -> None:
        self.backend.model = model  # same module object: already up to date

    def close(self) -> None:
        self.backend.model = None


def make_hf_rollout(model: Any, tokenizer: Any, options: Mapping[str, Any]) -> RolloutEngine:
    return HFRollout(
        model,
        tokenizer,
        batch_size=int(options.get("batch_size", 8)),
        chat=str(options.get("chat", "auto")),
        enable_thinking=options.get("enable_thinking", False),
    )
