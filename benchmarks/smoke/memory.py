"""Gradient checkpointing (that it recomputes, and what it saves at 1-2k tokens) and the
training state's save time."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.smoke.base import check, device, need_cuda


def _update(model: Any, tokens: int, dev: str, counter: list[int] | None = None) -> None:
    """One engine update (policy_update: training mode, chunked LM head) on one row."""
    import torch

    from trainers.core.batch import Region, Row
    from trainers.core.loss import LossConfig
    from trainers.engine.update import policy_update

    gen = torch.Generator().manual_seed(0)
    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(3, vocab, (tokens,), generator=gen).tolist()
    row = Row.prompt_completion(ids[: tokens // 4], ids[tokens // 4 :], Region.RESPONSE, 1.0)
    acc = _Acc(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    cfg = LossConfig(beta=0.0, max_tokens=tokens, logits_chunk_tokens=512)
    policy_update(
        acc, model, None, opt, [row], loss_config=cfg, micro_rows=1, pad_id=0,
        max_grad_norm=1.0, all_reduce_sum=lambda t: t,
    )  # fmt: skip


class _Acc:
    """The one-process Accelerator surface policy_update uses."""

    num_processes = 1

    def __init__(self, dev: str) -> None:
        import torch

        self.device = torch.device(dev)

    def no_sync(self, model: Any) -> Any:
        import contextlib

        return contextlib.nullcontext()

    def backward(self, loss: Any) -> None:
        loss.backward()

    def clip_grad_norm_(self, params: Any, norm: float) -> Any:
        import torch

        return torch.nn.utils.clip_grad_norm_(params, norm)


def _qwen(tmp: Path, gpu: bool) -> Any:
    """A Qwen3.5-shaped policy (3 gated-delta-net layers + 1 full attention): hidden 1,024 on
    a GPU (activations that show at 1.5k tokens), 32 on the CPU; dropout off, as the engine
    loads it."""
    import torch

    from benchmarks.fixtures.tiny_models import tiny_qwen35
    from cppo_bench.backends.hf import load_model
    from trainers.engine.update import disable_dropout

    folder = tiny_qwen35(tmp / "qwen", head_dim=256 if gpu else 8, context=4096)
    model, _, _ = load_model(str(folder), dtype=torch.float32)
    model.config.use_cache = False
    disable_dropout(model)
    return model


@check("ckpt-recompute", "gradient checkpointing recomputes each layer in backward", gpu=False)
def ckpt_recompute(tmp: Path) -> str:
    """Counted, not assumed: the forwards of a decoder layer's MLP under autograd double with
    checkpointing (the engine once left the policy in eval mode, where transformers skips it)."""
    import torch

    model = _qwen(tmp, gpu=False)
    mlp = type(model.model.layers[0].mlp)
    counts: list[Any] = []
    real = mlp.forward

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        if torch.is_grad_enabled():
            counts[-1] += 1
        return real(self, *args, **kwargs)

    mlp.forward = counting
    try:
        for on in (False, True):
            if on:
                model.gradient_checkpointing_enable({"use_reentrant": False})
            counts.append(0)
            _update(model, 64, "cpu")
    finally:
        mlp.forward = real
    if counts[1] != 2 * counts[0] or counts[0] == 0:
        raise AssertionError(f"MLP forwards with grad: {counts[0]} plain, {counts[1]} checkpointed")
    return f"MLP forwards under autograd: {counts[0]} plain, {counts[1]} checkpointed"


@check("ckpt-memory", "peak GPU memory of one 1.5k-token update with and without checkpointing")
def ckpt_memory(tmp: Path) -> str:
    need_cuda()
    import torch

    gpu = device() == "cuda"
    peaks = []
    for on in (False, True):
        model = _qwen(tmp, gpu).to(device())
        if on:
            model.gradient_checkpointing_enable({"use_reentrant": False})
        if gpu:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        _update(model, 1536, device())
        peaks.append(torch.cuda.max_memory_allocated() / 2**30 if gpu else 0.0)
        del model
    n = sum(p.numel() for p in _qwen(tmp, gpu).parameters()) / 1e6
    if gpu and not peaks[1] < peaks[0]:
        raise AssertionError(f"checkpointing saved nothing: {peaks[0]:.2f} vs {peaks[1]:.2f} GiB")
    return (
        f"{n:.0f}M params, 1536 tokens: peak {peaks[0]:.2f} GiB plain, {peaks[1]:.2f} checkpointed"
    )


@check("state-save", "a full training state (weights + AdamW) saved, timed", gpu=False)
def state_save(tmp: Path) -> str:
    """What ``state_every`` weighs: the seconds and GB/s of one state save; a 4B policy's
    state is ~48 GB (fp32 weights + two AdamW moments)."""
    import torch
    from accelerate import Accelerator

    from trainers.engine import checkpoint

    gpu = torch.cuda.is_available()
    acc = Accelerator(cpu=not gpu)
    model = _qwen(tmp, gpu)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    model, opt = acc.prepare(model, opt)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()  # the moments exist, as after a real step
    start = time.perf_counter()
    checkpoint.save_state(acc, tmp / "run", 1, {"cursor": 1, "seed": 0})
    seconds = time.perf_counter() - start
    size = sum(f.stat().st_size for f in (tmp / "run").rglob("*") if f.is_file()) / 1e9
    rate = size / max(seconds, 1e-9)
    line = f"{size:.3f} GB in {seconds:.2f} s"
    # a tiny CPU state is all overhead: its rate says nothing about a 48 GB 4B state
    return line + (f" ({rate:.2f} GB/s: a 4B state of 48 GB ~{48 / rate:.0f} s)" if gpu else "")
