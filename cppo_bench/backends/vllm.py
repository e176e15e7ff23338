"""`vllm` backend: vLLM's offline engine (`vllm.LLM`), imported only when used.

Prompts are rendered by cppo_bench.backends.chat with the engine's own tokenizer and sent
as token ids, so hf and vllm see the same prompt tokens. Automatic prefix caching is on:
the K solver calls that share a problem prompt (and PlanSearch's shared stages) reuse
the cached KV blocks of the common prefix instead of recomputing it.

Every request carries its own seed (vLLM's per-request `SamplingParams.seed`), so a
request's text does not depend on the other requests in the call on the same engine
build and hardware; vLLM does not promise bitwise batch invariance, see its docs on
reproducibility.

vLLM starts worker processes: scripts that use this backend need an
`if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

from cppo_bench.backends import chat as chatmod
from cppo_bench.backends.base import BackendError, GenRequest, GenResult, ProgressFn
from cppo_bench.backends.default_model import DEFAULT_MODEL, ensure_default_model
from cppo_bench.util.termsafe import quote

INSTALL_HINT = "pip install 'cppo-bench[vllm]'"
FINISH = {"stop": "stop", "length": "length"}  # vLLM's other reason, "abort", is an error


def import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise BackendError(
            f"the vllm backend needs vLLM, which is not importable ({exc}): {INSTALL_HINT}"
        ) from None
    return vllm


class VLLMBackend:
    """Offline vLLM engine. Build it with `make_vllm_backend`."""

    name = "vllm"

    def __init__(
        self,
        llm: Any,
        model_id: str,
        *,
        chat: str = "auto",
        chunk_size: int | None = None,
        enable_thinking: bool | None = chatmod.DEFAULT_ENABLE_THINKING,
    ) -> None:
        self.llm, self.model_id, self.chat = llm, model_id, chat
        self.enable_thinking = enable_thinking
        self.chunk_size = chunk_size  # requests per engine call (None: all at once)
        self.tokenizer = llm.get_tokenizer()
        self._vllm = import_vllm()

    def sampling_params(self, req: GenRequest) -> Any:
        p = req.params
        return self._vllm.SamplingParams(
            n=1,
            temperature=p.temperature,
            top_p=p.top_p if p.temperature > 0 else 1.0,
            max_tokens=p.max_tokens,
            seed=p.seed,
            stop=list(p.stop) or None,
            skip_special_tokens=True,
        )

    def generate(
        self, requests: Sequence[GenRequest], progress: ProgressFn | None = None
    ) -> list[GenResult]:
        results: list[GenResult] = []
        size = self.chunk_size or max(1, len(requests))
        for start in range(0, len(requests), size):
            chunk = requests[start : start + size]
            prompts = [
                {
                    "prompt_token_ids": chatmod.encode(
                        self.tokenizer, r, self.chat, self.enable_thinking
                    )
                }
                for r in chunk
            ]
            params = [self.sampling_params(r) for r in chunk]
            outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
            results.extend(self._result(o) for o in outputs)
            if progress:
                progress(len(chunk))
        return results

    @staticmethod
    def _result(output: Any) -> GenResult:
        completion = output.outputs[0]
        finish = FINISH.get(str(completion.finish_reason), "error")
        extra: dict[str, Any] = {}
        cached = getattr(output, "num_cached_tokens", None)
        if cached is not None:  # prompt tokens served from the prefix cache
            extra["cached_prompt_tokens"] = int(cached)
        if finish == "error":
            extra["error"] = f"vLLM finish_reason {quote(completion.finish_reason)}"
        return GenResult(
            text=completion.text,
            num_tokens=len(completion.token_ids),
            finish_reason=finish,
            prompt_tokens=len(output.prompt_token_ids or []),
            extra=extra,
        )

    def close(self) -> None:
        """Free the engine (and its GPU memory) so a later backend in this process can start."""
        if self.llm is None:
            return
        engine = getattr(self.llm, "llm_engine", None)
        shutdown = getattr(engine, "shutdown", None) or getattr(
            getattr(engine, "engine_core", None), "shutdown", None
        )
        if callable(shutdown):
            try:
                shutdown()
            except Exception:  # noqa: BLE001 - best effort; the process may be exiting
                pass
        self.llm = None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def make_vllm_backend(
    model: str | None = None,
    *,
    tensor_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    dtype: str = "auto",
    enforce_eager: bool = False,
    enable_prefix_caching: bool = True,
    seed: int = 0,
    trust_remote_code: bool = False,
    chat: str = "auto",
    chunk_size: int | None = None,
    batch_size: int | None = None,
    enable_thinking: bool | None = chatmod.DEFAULT_ENABLE_THINKING,
    **engine_args: Any,
) -> VLLMBackend:
    """The `vllm` backend. `model`: a hub id or local folder; None serves the embedded
    SmolLM2 (its de-quantised cache folder). Options: tensor_parallel_size,
    gpu_memory_utilization, max_model_len, dtype, enforce_eager, enable_prefix_caching
    (default on), seed (engine seed; every request also has its own), chat
    (auto|template|plain), chunk_size (requests per engine call, for progress; default
    all), batch_size (vLLM's max_num_seqs), enable_thinking (false|true|null, as for the
    hf backend: prompts are rendered by the same chat module). Any other option goes to
    `vllm.LLM` as is (e.g. swap_space, kv_cache_dtype)."""
    if chat not in chatmod.CHAT_MODES:
        raise BackendError(
            f"chat must be one of {', '.join(chatmod.CHAT_MODES)}, got {quote(chat)}"
        )
    try:
        chatmod.check_enable_thinking(enable_thinking)
    except ValueError as exc:
        raise BackendError(str(exc)) from None
    if model is not None:
        from cppo_bench.backends.hf_load import check_model_folder

        check_model_folder(model)  # every entry, before vLLM opens any
    vllm = import_vllm()
    if model is None:
        path, model_id = str(ensure_default_model()), DEFAULT_MODEL
    else:
        path, model_id = model, model
    kwargs: dict[str, Any] = {
        "model": path,
        "tensor_parallel_size": int(tensor_parallel_size),
        "gpu_memory_utilization": float(gpu_memory_utilization),
        "dtype": dtype,
        "enforce_eager": bool(enforce_eager),
        "enable_prefix_caching": bool(enable_prefix_caching),
        "seed": int(seed),
        "trust_remote_code": bool(trust_remote_code),
        **engine_args,
    }
    if max_model_len is not None:
        kwargs["max_model_len"] = int(max_model_len)
    if batch_size is not None:
        kwargs.setdefault("max_num_seqs", int(batch_size))
    try:
        llm = vllm.LLM(**kwargs)
    except (OSError, ValueError) as exc:  # missing weights, offline hub, bad engine config
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BackendError(
            f"vllm backend: cannot start model {quote(model or path)}: {first}"
        ) from exc
    return VLLMBackend(
        llm, model_id, chat=chat, chunk_size=chunk_size, enable_thinking=enable_thinking
    )


make_vllm_backend.default_model = DEFAULT_MODEL  # type: ignore[attr-defined]
