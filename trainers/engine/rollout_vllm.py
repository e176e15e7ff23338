"""``vllm`` rollout engine: a colocated vLLM engine that gets the policy's weights in place.

After every optimizer step the trainer calls ``sync(model)``: the policy's full state dict is
streamed into the engine's model with ``load_weights`` (no disk round trip) and the prefix
cache is reset (cached KV blocks were computed by the old weights). vLLM is imported lazily;
the engine is built from the policy's starting folder, so its tokenizer and config match.

Prompts are encoded by the same ``chat.encode`` as the hf path and handed to vLLM as token
ids, so both engines sample the same prompts; each request keeps its own seed.

Each completion token's log-prob is asked for (``logprobs=0``: the sampled token's) after
temperature scaling (``logprobs_mode="processed_logprobs"``, as TRL does), so the update can log
the mean |logp_vllm - logp_policy| and, when ``vllm_is_cap`` is set, apply TRL's truncated
importance-sampling correction. A vLLM without ``logprobs_mode`` reports raw (T = 1) log-probs,
which would not compare; it reports none then.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from cppo_bench.backends import chat as chatmod
from cppo_bench.backends.base import SamplingParams
from cppo_bench.backends.vllm import import_vllm
from trainers.engine.rollout import ROLLOUT_ENGINES, Rollout, RolloutEngine, RolloutRequest, _finish


def _engine_model_loader(llm: Any) -> Any:
    """A callable f(fn) running fn(model) on the engine's model, across vLLM versions."""
    if hasattr(llm, "apply_model"):  # vLLM >= 0.8: works for the V1 engine too
        return llm.apply_model
    executor = llm.llm_engine.model_executor  # V0 engine, single worker
    model = executor.driver_worker.model_runner.model
    return lambda fn: [fn(model)]


class VLLMRollout:
    def __init__(self, model_path: str, tokenizer: Any, options: Mapping[str, Any]) -> None:
        # Colocated: the engine core runs in this process (as TRL's colocate mode does), so
        # load_weights reads the policy's tensors directly: no pickling, no second process.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        vllm = import_vllm()
        self._vllm = vllm
        self.tokenizer = tokenizer
        extra = {k: options[k] for k in ("enforce_eager", "max_model_len") if k in options}
        kwargs = {
            "model": model_path,
            "gpu_memory_utilization": float(options.get("gpu_memory_utilization", 0.3)),
            "enable_prefix_caching": True,
            "seed": 0,
            "dtype": str(options.get("dtype", "auto")),
            **extra,
        }
        try:  # log-probs after temperature, comparable with the policy's (vLLM >= 0.10.2)
            self.llm = vllm.LLM(**kwargs, logprobs_mode="processed_logprobs")
            self.logprobs = True
        except TypeError:
            self.llm = vllm.LLM(**kwargs)
            self.logprobs = False

    def generate(
        self, requests: Sequence[RolloutRequest], sampling: SamplingParams
    ) -> list[Rollout]:
        prompts, params = [], []
        for req in requests:
            ids = chatmod.encode(self.tokenizer, req.gen_request(sampling))
            prompts.append({"prompt_token_ids": ids})
            params.append(
                self._vllm.SamplingParams(
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens,
                    seed=req.seed,
                    stop=list(req.stop) or None,
                    logprobs=0 if self.logprobs else None,
                )
            )
        outs = self.llm.generate(prompts, params, use_tqdm=False)
        return [
            _finish(
                req,
                out.prompt_token_ids,
                out.outputs[0].token_ids,
                out.outputs[0].text,
                out.outputs[0].finish_reason or "length",
                sampled_logprobs(out.outputs[0]) if self.logprobs else None,
            )
            for req, out in zip(requests, outs, strict=True)
        ]

    def sync(self, model: Any) -> None:
        # one named tensor at a time, on the engine's device: no second full copy in memory
        state = {k: v.detach() for k, v in model.state_dict().items()}
        apply = _engine_model_loader(self.llm)
        apply(lambda m: m.load_weights(weights=state.items()))
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()

    def close(self) -> None:
        self.llm = None


def sampled_logprobs(completion: Any) -> list[float] | None:
    """The log-prob vLLM reported for each sampled token (NaN where it reported none)."""
    per_token = getattr(completion, "logprobs", None)
    if not per_token:
        return None
    out = []
    for tok, entry in zip(completion.token_ids, per_token, strict=False):
        lp = entry.get(tok) if entry else None
        out.append(float(getattr(lp, "logprob", lp)) if lp is not None else float("nan"))
    out += [float("nan")] * (len(completion.token_ids) - len(out))
    return out


@ROLLOUT_ENGINES.register("vllm")
def make_vllm_rollout(model: Any, tokenizer: Any, options: Mapping[str, Any]) -> RolloutEngine:
    path = options.get("model_path")
    if not path:
        raise ValueError("the vllm rollout engine needs the policy's starting folder (model_path)")
    engine = VLLMRollout(str(path), tokenizer, options)
    engine.sync(model)  # a resumed policy differs from the folder
    return engine
