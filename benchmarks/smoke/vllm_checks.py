"""The colocated vLLM engine on a GPU: the in-place sync, a short training run with sleep mode
at the study's temperature on a Qwen3.5-shaped model, a collective after the engine closes,
and the engine's start with the default context on a 9B-shaped model (random weights:
vLLM's ``load_format="dummy"``, nothing from the hub)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.smoke.base import check, need_cuda, need_module


@check("vllm-sync", "greedy vLLM equals HF after an in-place weight sync")
def vllm_sync(tmp: Path) -> str:
    need_cuda()
    need_module("vllm")
    import torch
    from train_helpers import tiny_model_dir
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import ROLLOUT_ENGINES, HFRollout, RolloutRequest

    folder = tiny_model_dir(tmp / "tiny", head_dim=32)
    tok = AutoTokenizer.from_pretrained(folder)
    policy = AutoModelForCausalLM.from_pretrained(folder).to("cuda")
    options = {"model_path": str(folder), "gpu_memory_utilization": 0.2, "enforce_eager": True}
    engine = ROLLOUT_ENGINES.get("vllm")(policy, tok, options)
    with torch.no_grad():  # new weights: the engine must follow them after the sync
        for p in policy.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    engine.sync(policy)
    prob = Problem("toy", "p", "s", (Test("", ""),), "lcb")
    reqs = [RolloutRequest(prob, seed=i, prompt=f"say {i} " * 3) for i in range(4)]
    sampling = SamplingParams(temperature=1e-4, top_p=1.0, max_tokens=8)
    got = [r.completion_ids for r in engine.generate(reqs, sampling)]
    want = [r.completion_ids for r in HFRollout(policy, tok).generate(reqs, sampling)]
    engine.close()
    if got != want:
        raise AssertionError(f"vLLM after sync {got} != HF {want}")
    return "greedy vLLM == HF after an in-place sync"


@check("vllm-train", "3 steps, vLLM rollouts at T=0.7 with sleep mode, Qwen3.5-shaped; logp gap")
def vllm_train(tmp: Path) -> str:
    """The path a GPU user runs: rollout_engine vllm with sleep mode (weights and KV cache
    freed during the update, woken for the sync), sampling at the study's T = 0.7, CUDA graphs
    on, a hub-shaped Qwen3.5 composite (gated-delta-net layers, the language-model-only
    engine). Reported: the sampler / trainer log-prob gap of each step (round-off after each
    sync; a missed or misnamed sync shows as a gap of tenths)."""
    need_cuda()
    need_module("vllm")
    from tiny_models import tiny_qwen35
    from toy_task import run

    model = tiny_qwen35(tmp / "qwen", head_dim=128, context=4096)
    out = tmp / "run"
    run(
        out, model, steps=3, parity_reward=True, rollout_engine="vllm", vllm_sleep=True,
        temperature=0.7, max_tokens=16, vllm_gpu_memory_utilization=0.2,
    )  # fmt: skip
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    gaps = [m.get("sampler_logp_gap") for m in steps]
    if len(steps) != 3 or any(g is None or not math.isfinite(g) for g in gaps):
        raise AssertionError(f"no sampler/trainer gap over 3 steps: {gaps}")
    if max(gaps) > 0.05:
        raise AssertionError(f"sampler/trainer log-prob gap {gaps}: the sync is off")
    return "gap " + ", ".join(f"{g:.4f}" for g in gaps) + " (T=0.7, sleep mode)"


@check("vllm-close", "a collective on the trainer's process group after the engine closes")
def vllm_close(tmp: Path) -> str:
    """vLLM 0.32's shutdown destroyed the default process group: a trainer's barrier after
    close() failed (the CPPO stage barrier after warm-up)."""
    need_cuda()
    need_module("vllm")
    import torch
    import torch.distributed as dist
    from train_helpers import tiny_model_dir
    from transformers import AutoTokenizer

    from trainers.engine.rollout_vllm import VLLMRollout

    folder = tiny_model_dir(tmp / "tiny", head_dim=32)
    tok = AutoTokenizer.from_pretrained(folder)
    made = not dist.is_initialized()
    if made:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        opts = {"gpu_memory_utilization": 0.1, "enforce_eager": True, "max_model_len": 256}
        VLLMRollout(str(folder), tok, opts).close()
        if not dist.is_initialized():
            raise AssertionError("closing the engine destroyed the trainer's process group")
        t = torch.ones(2)
        dist.all_reduce(t)
        dist.barrier()
    finally:
        if made and dist.is_initialized():
            dist.destroy_process_group()
    return "all-reduce and barrier after close()"


# Qwen3.5-9B's text shape as published (approximate: the smoke test needs its size and its
# 262,144-token default context, not its exact weights)
QWEN35_9B_TEXT = {
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 32,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 8,
    "vocab_size": 248320,
    "max_position_embeddings": 262144,
}


@check("vllm-context-9b", "vLLM starts for a 9B-shaped Qwen3.5 at utilisation 0.3, default context")
def vllm_context_9b(tmp: Path) -> str:
    """The engine's arguments as the trainer builds them with ``vllm_max_model_len: 0`` (a
    2k-token prompt, max_tokens 2048), on a 9B-shaped config with dummy weights: vLLM's
    start-up check that one full-length request fits the KV cache passes. With the model's
    own context (262,144) it did not at 0.3 of an 80 GB card."""
    need_cuda()
    need_module("vllm")
    from tiny_models import tiny_tokenizer
    from transformers import Qwen3_5Config

    from cppo_bench.backends.vllm import import_vllm
    from trainers.engine.rollout_vllm import engine_kwargs

    folder = tmp / "qwen9b"
    tok = tiny_tokenizer(eos="<|im_end|>")
    text = {**QWEN35_9B_TEXT, "eos_token_id": tok.eos_token_id}
    cfg = Qwen3_5Config(text_config=text, tie_word_embeddings=False)
    cfg.save_pretrained(folder)
    tok.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    opts = {"gpu_memory_utilization": 0.3, "longest_prompt": lambda: 2048, "max_tokens": 2048}
    kwargs = engine_kwargs(str(folder), opts, True, config)
    llm = import_vllm().LLM(**kwargs, load_format="dummy")
    length = llm.llm_engine.model_config.max_model_len
    del llm
    own = QWEN35_9B_TEXT["max_position_embeddings"]
    return f"started, max_model_len {length} (the model's own: {own})"
