"""Completion log-probs without a (B, C, V) logits tensor: the LM head runs over chunks.

``logits_to_keep`` already limits the head to positions that predict a scored token, but one
micro-batch of B rows x C completion tokens still made B x C x V fp32 logits (V = 248,320 for
Qwen3.5: 2 GB per row at C = 2,048, plus the log-softmax backward's copy). Here the head,
the model's final-logit softcap, the temperature, the log-softmax and the gather run over at
most ``chunk`` scored positions at a time; with autograd on each chunk is checkpointed, so
its logits are freed after the forward and recomputed in the backward. Peak logits memory is
one chunk's; the log-probs and gradients are those of the full logits (same ops per position).

Why inside the head's own forward call (the model calls ``lm_head(hidden)``, which is
temporarily replaced for that one call) rather than on ``hidden_states[-1]`` outside the
model: (1) the tensor is exactly what the model feeds its head (after its final norm and its
``logits_to_keep`` slice), for every family; (2) FSDP2 (the root unit holds the head) and
DeepSpeed ZeRO-3 (parameters gathered around a module's forward, and again before its
backward through hooks on that forward's outputs) have the head's weight gathered while the
chunks run, and the chunks' graphs hang off the head's output, so the backward recompute
runs after the same gather hooks fire.

What the model does to the head's output afterwards is checked, not assumed: Gemma's
``final_logit_softcapping`` is read from the config, applied per chunk exactly as the model
does (in the head's dtype: / cap, tanh, * cap), and switched off in the config for the call;
if the logits the model returns are not the log-probs the chunks produced (a family that
scales or caps its logits some other way), the call fails in one line rather than train on
wrong numbers. Pure math, no I/O.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

HeadFn = Callable[[Tensor], Tensor]


def _chunk_logprobs(
    head_fn: HeadFn, hidden: Tensor, targets: Tensor, temperature: float, softcap: float | None
) -> Tensor:
    # the same ops, in the same dtypes, as the model's head + softcap then the loss's
    # .float() / T, log-softmax and gather: equal log-probs position by position
    logits = head_fn(hidden)
    if softcap is not None:  # transformers' Gemma: logits / cap -> tanh -> * cap, head dtype
        logits = logits / softcap
        logits = torch.tanh(logits)
        logits = logits * softcap
    lg = logits.float()
    if temperature != 1.0:
        lg = lg / temperature
    picked = lg.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(lg, -1)


def head_logprobs(
    head_fn: HeadFn,
    hidden: Tensor,
    targets: Tensor,
    scored: Tensor,
    chunk: int,
    temperature: float = 1.0,
    softcap: float | None = None,
) -> Tensor:
    """(B, K) fp32 log-probs of ``targets`` (B, K) under softmax(head(hidden) / T), 0 where
    ``scored`` (B, K) is false; ``hidden`` (B, K, H) is the head's input. At most ``chunk``
    positions go through the head at once; with grad enabled each chunk is recomputed in the
    backward. A batch with nothing scored still runs the head on one position (times 0):
    the padding micro-batch of a DDP / FSDP process must build a graph and run its backward
    (and collectives) like any other."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    b, k = scored.shape
    rows, cols = scored.nonzero(as_tuple=True)
    flat = hidden[rows, cols]  # (P, H): only the scored positions, row-major
    tgt = targets[rows, cols]
    # one chunk holds every position: checkpointing would only add a recompute, and keep its
    # input besides the logits autograd saves anyway (measured 1.33x the unchunked peak)
    grad = torch.is_grad_enabled() and flat.shape[0] > chunk
    pieces = []
    for s in range(0, flat.shape[0], chunk):
        h, t = flat[s : s + chunk], tgt[s : s + chunk]
        if grad:  # the chunk's logits are freed now and recomputed in the backward;
            # no RNG state to restore (a head has no dropout): skip stashing it per chunk
            pieces.append(
                checkpoint(
                    _chunk_logprobs,
                    head_fn,
                    h,
                    t,
                    temperature,
                    softcap,
                    use_reentrant=False,
                    preserve_rng_state=False,
                )
            )
        else:  # no-grad scoring (old policy, reference), or a single chunk: plain calls
            pieces.append(_chunk_logprobs(head_fn, h, t, temperature, softcap))
    out = torch.zeros((b, k), dtype=torch.float32, device=hidden.device)
    if not pieces:
        one = _chunk_logprobs(head_fn, hidden[:1, 0], targets[:1, 0], temperature, softcap)
        return out + one.sum() * 0.0
    return out.index_put((rows, cols), torch.cat(pieces))


def final_softcap(model: nn.Module) -> float | None:
    """The model's ``final_logit_softcapping`` (Gemma 2/3/4), None when it has none."""
    cfg: Any = getattr(model, "config", None)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return getattr(text, "final_logit_softcapping", None)


@contextlib.contextmanager
def _softcap_off(model: nn.Module) -> Iterator[None]:
    # the chunks apply the softcap themselves; the model must not apply it a second time
    cfg: Any = getattr(model, "config", None)
    saved: list[tuple[Any, float]] = []
    for c in (cfg, _text(cfg)):  # the text config may be the config itself (Gemma4ForCausalLM)
        if _has_cap(c) and all(c is not d for d, _ in saved):
            saved.append((c, c.final_logit_softcapping))
    for c, _ in saved:
        c.final_logit_softcapping = None
    try:
        yield
    finally:
        for c, v in saved:
            c.final_logit_softcapping = v


def _text(cfg: Any) -> Any:
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else None


def _has_cap(cfg: Any) -> bool:
    return getattr(cfg, "final_logit_softcapping", None) is not None


def chunked_model_logprobs(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    keep: Tensor,
    targets: Tensor,
    scored: Tensor,
    chunk: int,
    temperature: float = 1.0,
) -> Tensor:
    """(B, K) log-probs at the kept positions: column j scores ``targets[:, j]`` (token
    keep[j] + 1), 0 where ``scored`` (B, K) is false. ``model`` is a transformers causal LM
    that takes ``logits_to_keep`` (possibly wrapped: DDP / DeepSpeed ``.module``, or
    FSDP2-sharded)."""
    inner = getattr(model, "module", model)
    get_head = getattr(inner, "get_output_embeddings", None)
    head = get_head() if get_head is not None else None
    if head is None:
        raise ValueError(
            f"logits_chunk_tokens: {type(inner).__name__} has no output embeddings "
            "(get_output_embeddings() is None); set logits_chunk_tokens: 0"
        )
    b = input_ids.shape[0]
    softcap = final_softcap(inner)
    orig = head.forward  # the bound forward: reads the weight when called (gathered or not)
    made: list[Tensor] = []

    def forward(hidden: Tensor) -> Tensor:
        if tuple(hidden.shape[:2]) != (b, keep.numel()):
            raise ValueError(
                f"logits_chunk_tokens: the head of {type(inner).__name__} saw hidden states "
                f"{tuple(hidden.shape)}, not the ({b}, {keep.numel()}) kept positions; "
                "set logits_chunk_tokens: 0"
            )
        made.append(head_logprobs(orig, hidden, targets, scored, chunk, temperature, softcap))
        return made[-1]

    had = "forward" in head.__dict__
    head.forward = forward  # this one call only: nn.Module.__call__ runs the hooks around it
    try:
        with _softcap_off(inner):
            out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=keep)
    finally:
        if had:
            head.forward = orig
        else:
            del head.forward
    got: Tensor = out.logits if hasattr(out, "logits") else out
    if len(made) != 1 or not _same(got, made[0]):
        raise ValueError(
            f"logits_chunk_tokens: {type(inner).__name__} called its head {len(made)} times or "
            "changed its output after the head (a logit transform the chunked path does not "
            "know); set logits_chunk_tokens: 0"
        )
    return got


def _same(a: Tensor, b: Tensor) -> bool:
    # values, not identity: DeepSpeed hooks hand the model a new tensor with the same values
    if a.shape != b.shape:
        return False
    with torch.no_grad():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
