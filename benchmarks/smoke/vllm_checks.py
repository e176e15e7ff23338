"""The colocated vLLM engine on a GPU: the in-place sync, a short training run with sleep mode
at the study's temperature on a Qwen3.5-shaped model, a collective after the engine closes,
and the engine's start with the default context on a 9B-shaped model (random weights:
vLLM's ``load_format="dummy"``, nothing from the hub)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks.smoke.base import check, need_cuda, need_module


@check("vllm-sync", "greedy vLLM equals HF after an in-place weight sync")
def vllm_sync(tmp: Path) -> str:
    need_cuda()
    need_module("vllm")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchmarks.fixtures.tiny_models import tiny_model_dir
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import HFRollout, RolloutRequest
    from trainers.engine.rollout_engines import ROLLOUT_ENGINES

    folder = tiny_model_dir(tmp / "tiny", head_dim=32)
    tok = AutoTokenizer.from_pretrained(folder)
    # (Any: transformers types `.to` through a decorator that loses the bound model)
    policy: Any = AutoModelForCausalLM.from_pretrained(folder)
    policy = policy.to("cuda")
    # the engine runs the policy's own dtype (fp32): vLLM's "auto" casts an fp32 checkpoint
    # to bf16, whose rounding changes greedy tokens of a random model without any sync fault
    options = {"model_path": str(folder), "gpu_memory_utilization": 0.2, "enforce_eager": True}
    options["dtype"] = "float32"
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
    return "greedy vLLM == HF after an in-place sync (both fp32)"


@check("vllm-train", "3 steps, vLLM rollouts at T=0.7 with sleep mode, Qwen3.5-shaped; logp gap")
def vllm_train(tmp: Path) -> str:
    """The path a GPU user runs: rollout_engine vllm with sleep mode (weights and KV cache
    freed during the update, woken for the sync), sampling at the study's T = 0.7, CUDA graphs
    on, a hub-shaped Qwen3.5 composite (gated-delta-net layers, the language-model-only
    engine). Reported: the sampler / trainer log-prob gap of each step (round-off after each
    sync; a missed or misnamed sync shows as a gap of tenths)."""
    need_cuda()
    need_module("vllm")
    from benchmarks.fixtures.tiny_models import tiny_qwen35
    from benchmarks.fixtures.toy_task import run

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
    from transformers import AutoTokenizer

    from benchmarks.fixtures.tiny_models import tiny_model_dir
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


# one engine start in a fresh process: the started engine's max_model_len, or vLLM's refusal
_START = """
import json, sys
from benchmarks.smoke.vllm_checks import start_engine
print(json.dumps(start_engine(sys.argv[1], float(sys.argv[2]), sys.argv[3] == "cap")))
"""


def start_engine(folder: str, utilisation: float, capped: bool) -> dict:
    """Start vLLM on ``folder`` (dummy weights, bf16) as the trainer would with
    ``vllm_max_model_len: 0`` (capped) or at the model's own context; what happened."""
    import os

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from cppo_bench.backends.vllm import import_vllm
    from trainers.engine.rollout_vllm import engine_kwargs

    config = json.loads((Path(folder) / "config.json").read_text())
    opts: dict = {"gpu_memory_utilization": utilisation, "dtype": "bfloat16", "enforce_eager": True}
    if capped:
        opts |= {"longest_prompt": lambda: 2048, "max_tokens": 2048}
    kwargs = engine_kwargs(folder, opts, True, config)
    try:
        llm = import_vllm().LLM(**kwargs, load_format="dummy")
    except Exception as exc:  # vLLM refuses a context whose KV cache does not fit
        return {"started": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"started": True, "max_model_len": llm.llm_engine.model_config.max_model_len}


def _start(folder: Path, utilisation: float, capped: bool) -> dict:
    import os
    import subprocess
    import sys

    from benchmarks.smoke.base import REPO

    argv = [sys.executable, "-c", _START, str(folder), str(utilisation)]
    argv.append("cap" if capped else "own")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=420)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"started": False, "error": f"rc {proc.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


@check("vllm-context-9b", "9B-shaped Qwen3.5 on an 80 GB card's vLLM share: capped context starts")
def vllm_context_9b(tmp: Path) -> str:
    """The engine's arguments as the trainer builds them with ``vllm_max_model_len: 0`` (a
    2k-token prompt, max_tokens 2048), on a 9B-shaped config with dummy weights, given the
    share of the card that 0.3 of an 80 GB card is (24 GB: on a 141 GB card utilisation 0.17,
    else the larger card's KV cache holds the model's own 262,144 tokens and the cap would
    prove nothing). Both starts run, each in a fresh process: the capped one must start and
    the one at the model's own context must be refused, so the cap is what made it fit."""
    need_cuda()
    need_module("vllm")
    import torch
    from transformers import Qwen3_5Config

    from benchmarks.fixtures.tiny_models import tiny_tokenizer

    folder = tmp / "qwen9b"
    tok = tiny_tokenizer(eos="<|im_end|>")
    text = {**QWEN35_9B_TEXT, "eos_token_id": tok.eos_token_id, "dtype": "bfloat16"}
    cfg = Qwen3_5Config(text_config=text, tie_word_embeddings=False)
    cfg.save_pretrained(folder)
    tok.save_pretrained(folder)
    total = torch.cuda.get_device_properties(0).total_memory
    utilisation = round(min(0.9, 0.3 * 80e9 / total), 3)
    torch.cuda.empty_cache()  # the earlier checks' cached blocks: vLLM wants its share free
    capped = _start(folder, utilisation, True)
    if not capped["started"]:
        raise AssertionError(f"capped context did not start: {capped['error']}")
    own = _start(folder, utilisation, False)
    length = QWEN35_9B_TEXT["max_position_embeddings"]
    if own["started"]:
        raise AssertionError(f"the model's own context ({length}) also started: the cap was moot")
    if "max_model_len" not in own["error"] and "max seq len" not in own["error"]:
        raise AssertionError(f"own context refused for another reason: {own['error']}")
    return (
        f"utilisation {utilisation} ({utilisation * total / 1e9:.0f} GB): capped "
        f"max_model_len {capped['max_model_len']} starts, the model's own {length} is refused"
    )
