"""Helpers for the trainer tests: a tiny random Llama with the embedded model's tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tiny_model_dir(dest: Path, seed: int = 0, head_dim: int = 8) -> Path:
    """A 2-layer random Llama (fp32, 4 heads of `head_dim`) saved with SmolLM2's tokenizer and
    chat template. vLLM's CPU attention needs head_dim >= 32."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from cppo_bench.backends.default_model import ensure_default_model

    if (dest / "config.json").is_file():
        return dest
    tok = AutoTokenizer.from_pretrained(ensure_default_model())
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=4 * head_dim,
        intermediate_size=8 * head_dim,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    return dest


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
