"""`hf` backend: transformers on CPU or GPU, batched, with per-request seeds.

Decoding is our own loop over the model's forward pass (KV cache, left padding), not
`model.generate`, because `generate` draws every row of a batch from one global RNG: a
request's text would then depend on which other requests shared its batch. Here every
request owns a `torch.Generator` seeded with its `SamplingParams.seed`, its own
temperature / top_p / max_tokens / stop strings, and rows leave the batch when they finish.

Reproducibility guarantee: the same request with the same seed gives the same text on
the same machine, model, dtype and thread count, in any batch, in any position and in
any order — as long as the logits themselves agree. They are computed in a padded batch,
so batches of different sizes can differ in the last float bits; a draw that lands exactly
on such a tie may then differ. Same batch (same requests, same order, same batch size):
bit-identical. temperature 0 is greedy and ignores the seed.
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cppo_bench.backends import chat as chatmod
from cppo_bench.backends.base import (
    GenRequest,
    GenResult,
    ModelLoadError,
    ProgressFn,
    ResultFn,
)
from cppo_bench.backends.default_model import DEFAULT_MODEL
from cppo_bench.backends.hf_load import load_model
from cppo_bench.util.termsafe import quote

__all__ = ["HFBackend", "load_model", "make_hf_backend", "select_rows"]

CPU_BATCH, GPU_BATCH = 8, 32  # default batch sizes (requests per forward pass)
NUCLEUS_K = 1024  # candidates looked at before falling back to a full sort (see _sample)


@dataclass
class _Row:
    """Decoding state of one request."""

    index: int  # position in the caller's request list
    prompt: list[int]
    limit: int  # max new tokens (max_tokens, capped by the context window)
    temperature: float
    top_p: float
    stop: tuple[str, ...]
    generator: Any  # torch.Generator
    out: list[int] = field(default_factory=list)
    finish: str | None = None


def quiet_openmp() -> None:
    """Let idle OpenMP threads sleep instead of spin. On a shared or oversubscribed CPU the
    spinning made each decoding step ~10x slower here (2 threads: 2.3 s vs 0.3 s per step).
    Works only before torch is first imported; an explicit OMP_WAIT_POLICY wins."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pick_device(device: str = "auto") -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype != "auto":
        try:
            return getattr(torch, dtype)
        except AttributeError:
            raise ModelLoadError(
                f"unknown dtype {quote(dtype)} (float32, bfloat16, float16)"
            ) from None
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32  # on CPU float32 is the fastest and the most faithful


def set_threads(threads: int | None) -> int:
    """Use the cores this process may run on (torch's default can exceed a container's)."""
    import torch

    if threads is None:
        try:
            threads = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            threads = os.cpu_count() or 1
        threads = min(threads, torch.get_num_threads()) or 1
    torch.set_num_threads(max(1, int(threads)))
    return torch.get_num_threads()


def select_rows(past: Any, keep: Sequence[int], device: str) -> bool:
    """Keep only the batch rows `keep` of a transformers cache, in place; False when this
    cache cannot drop rows (the caller then feeds finished rows padding instead).

    `Cache.reorder_cache` (beam search's row gather) is the one method every cache layer
    kind implements for all of its tensors: key/value, sliding window, and the conv and
    recurrent states of linear-attention layers (Qwen3.5's gated delta net).
    `batch_select_indices` is not: linear-attention layers lack it (AttributeError on the
    first Qwen3.5 batch whose rows finish at different times) and the hybrid layers inherit
    the key/value-only version, which would keep stale recurrent states."""
    reorder = getattr(past, "reorder_cache", None)
    if reorder is None:
        return False
    import torch

    reorder(torch.tensor(list(keep), dtype=torch.long, device=device))
    return True


class HFBackend:
    """Batched sampling with transformers. Build it with `make_hf_backend`."""

    name = "hf"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        model_id: str,
        *,
        device: str,
        batch_size: int,
        chat: str = "auto",
        enable_thinking: bool | None = chatmod.DEFAULT_ENABLE_THINKING,
    ) -> None:
        import torch

        self.model, self.tokenizer, self.model_id = model, tokenizer, model_id
        self.device, self.batch_size, self.chat = device, batch_size, chat
        self.enable_thinking = enable_thinking
        self.model.eval()
        eos = getattr(model.generation_config, "eos_token_id", None)
        eos_ids = eos if isinstance(eos, list) else [eos]
        self.eos_ids = {i for i in [*eos_ids, tokenizer.eos_token_id] if i is not None}
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.eos_ids, default=0)
        config = model.config
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.context = int(getattr(text_config, "max_position_embeddings", 0) or 1 << 30)
        params = inspect.signature(model.forward).parameters
        self._keep_kw = next(
            (k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None
        )
        # transformers 5.24 renamed the forward's `past_key_values` to `cache` (the old name
        # warns, and goes in 5.40); older versions know only the old one
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._torch = torch

    # -- public -------------------------------------------------------------------------
    streams_results = True  # generate(on_result=...) hands each batch's results out at once

    def generate(
        self,
        requests: Sequence[GenRequest],
        progress: ProgressFn | None = None,
        on_result: ResultFn | None = None,
    ) -> list[GenResult]:
        rows: list[_Row] = []
        results: list[GenResult | None] = [None] * len(requests)
        for i, req in enumerate(requests):
            prompt = chatmod.encode(self.tokenizer, req, self.chat, self.enable_thinking)
            limit = min(req.params.max_tokens, self.context - len(prompt))
            if req.params.max_tokens <= 0:
                results[i] = GenResult("", 0, "length", prompt_tokens=len(prompt))
                continue
            if limit <= 0:
                results[i] = GenResult(
                    text="",
                    num_tokens=0,
                    finish_reason="error",
                    prompt_tokens=len(prompt),
                    extra={"error": f"prompt of {len(prompt)} tokens fills the context"},
                )
                continue
            gen = self._torch.Generator(device=self.device).manual_seed(int(req.params.seed))
            p = req.params
            rows.append(_Row(i, prompt, limit, p.temperature, p.top_p, tuple(p.stop), gen))
        # longest prompts first, so each batch pads little; outputs do not depend on batching
        rows.sort(key=lambda r: -len(r.prompt))
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            with self._torch.inference_mode():
                self._decode(batch)
            for row in batch:
                results[row.index] = result = self._result(row)
                if on_result:
                    on_result(row.index, result)
            if progress:
                progress(len(batch))
        return [r for r in results if r is not None]

    def close(self) -> None:
        self.model = None
        gc.collect()
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()

    # -- decoding -----------------------------------------------------------------------
    def _forward(self, ids: Any, mask: Any, pos: Any, past: Any) -> tuple[Any, Any]:
        kwargs: dict[str, Any] = {"use_cache": True}
        if self._keep_kw:
            kwargs[self._keep_kw] = 1  # only the last position's logits: no (B, L, V) tensor
        kwargs[self._cache_kw] = past
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, **kwargs)
        # read the output by key: the deprecated attribute name warns on newer versions
        cache = out.get("cache")
        return out.logits[:, -1, :].float(), cache if cache is not None else out.get(
            "past_key_values"
        )

    def _decode(self, batch: list[_Row]) -> None:
        torch = self._torch
        width = max(len(r.prompt) for r in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for j, r in enumerate(batch):
            ids[j, width - len(r.prompt) :] = torch.tensor(r.prompt)
            mask[j, width - len(r.prompt) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits, past = self._forward(ids, mask, pos, None)
        pos = pos[:, -1:]
        rows = list(batch)  # the rows of the current tensors, finished or not
        while True:
            tokens = self._sample(logits, rows)
            for j, r in enumerate(rows):
                if r.finish is None:
                    self._advance(r, tokens[j])
                else:  # only with a cache that cannot drop rows
                    tokens[j] = self.pad_id
            keep = [j for j, r in enumerate(rows) if r.finish is None]
            if not keep:
                return
            if len(keep) < len(rows) and select_rows(past, keep, self.device):
                # finished rows leave the batch (their cache too), so a long straggler
                # does not keep paying for the whole batch
                index = torch.tensor(keep, device=self.device)
                mask, pos = mask[index], pos[index]
                rows = [rows[j] for j in keep]
                tokens = [tokens[j] for j in keep]
            step = torch.tensor(tokens, device=self.device).unsqueeze(1)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            pos = pos + 1
            logits, past = self._forward(step, mask, pos, past)

    def _sample(self, logits: Any, rows: list[_Row]) -> list[int]:
        """One token per row: greedy at temperature 0, else nucleus sampling drawn from the
        row's own generator. Softmax and top-k run batched; the draws are per row."""
        torch = self._torch
        out = logits.argmax(-1).tolist()
        hot = [j for j, r in enumerate(rows) if r.temperature > 0]
        if not hot:
            return out
        index = torch.tensor(hot, device=logits.device)
        temps = torch.tensor([rows[j].temperature for j in hot], device=logits.device)
        probs = torch.softmax(logits[index] / temps[:, None], dim=-1)
        if any(rows[j].top_p < 1.0 for j in hot):
            # the nucleus is a prefix of the sorted distribution: when the top NUCLEUS_K
            # tokens already hold top_p of the mass it lies inside them (exact, and far
            # cheaper than sorting the whole vocabulary every step)
            top_p_mass, top_ids = probs.topk(min(NUCLEUS_K, probs.shape[-1]), dim=-1)
        for n, j in enumerate(hot):
            row = rows[j]
            if row.top_p >= 1.0:
                out[j] = int(torch.multinomial(probs[n], 1, generator=row.generator))
                continue
            p, ids = top_p_mass[n], top_ids[n]
            if float(p.sum()) < row.top_p:
                p, ids = probs[n].sort(descending=True)
            p = p.clone()
            p[(p.cumsum(-1) - p) >= row.top_p] = 0.0  # keeps at least the first token
            out[j] = int(ids[torch.multinomial(p, 1, generator=row.generator)])
        return out

    def _advance(self, row: _Row, token: int) -> None:
        row.out.append(token)
        if token in self.eos_ids:
            row.finish = "stop"
        elif row.stop and self._hit_stop(row):
            row.finish = "stop"
        elif len(row.out) >= row.limit:
            row.finish = "length"

    def _hit_stop(self, row: _Row) -> bool:
        # a stop string of n characters spans at most n tokens; a few more cover tokens
        # that decode to nothing on their own (partial UTF-8 bytes)
        window = max(len(s) for s in row.stop) + 4
        tail = self.tokenizer.decode(row.out[-window:], skip_special_tokens=True)
        return any(s in tail for s in row.stop)

    def _result(self, row: _Row) -> GenResult:
        body = row.out[:-1] if row.out and row.out[-1] in self.eos_ids else row.out
        text = self.tokenizer.decode(body, skip_special_tokens=True)
        if row.stop and row.finish == "stop":
            cuts = [text.find(s) for s in row.stop if s in text]
            if cuts:
                text = text[: min(cuts)]  # like OpenAI and vLLM: the stop string is dropped
        return GenResult(
            text=text,
            num_tokens=len(row.out),
            finish_reason=row.finish or "length",
            prompt_tokens=len(row.prompt),
        )


def make_hf_backend(
    model: str | None = None,
    *,
    device: str = "auto",
    dtype: str = "auto",
    batch_size: int | None = None,
    threads: int | None = None,
    chat: str = "auto",
    enable_thinking: bool | None = chatmod.DEFAULT_ENABLE_THINKING,
    trust_remote_code: bool = False,
) -> HFBackend:
    """The `hf` backend. `model`: None (embedded SmolLM2), a local folder, a .gguf file or a
    hub id (multimodal checkpoints such as Gemma 4 load their text model). Options: device
    (auto|cpu|cuda|cuda:N|mps), dtype (auto|float32|bfloat16|float16), batch_size (default 8
    on CPU, 32 on GPU), threads (CPU threads; default: usable cores), chat
    (auto|template|plain: how messages become a prompt), enable_thinking (false|true|null:
    passed to the chat template; false by default, as the study's prompts ask for a direct
    answer; null leaves the template's own default)."""
    if chat not in chatmod.CHAT_MODES:
        raise ModelLoadError(
            f"chat must be one of {', '.join(chatmod.CHAT_MODES)}, got {quote(chat)}"
        )
    try:
        chatmod.check_enable_thinking(enable_thinking)
    except ValueError as exc:
        raise ModelLoadError(str(exc)) from None
    quiet_openmp()
    dev = pick_device(device)
    if dev == "cpu":
        set_threads(threads)
    torch_dtype = pick_dtype(dtype, dev)
    m, tokenizer, model_id = load_model(
        model, dtype=torch_dtype, trust_remote_code=trust_remote_code
    )
    m = m.to(dev)
    size = int(batch_size) if batch_size else (CPU_BATCH if dev == "cpu" else GPU_BATCH)
    return HFBackend(
        m,
        tokenizer,
        model_id,
        device=dev,
        batch_size=max(1, size),
        chat=chat,
        enable_thinking=enable_thinking,
    )


quiet_openmp()  # importing this module is the earliest point we know torch will be used
make_hf_backend.default_model = DEFAULT_MODEL  # type: ignore[attr-defined]
