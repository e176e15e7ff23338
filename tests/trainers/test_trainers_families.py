"""Training the study's multimodal families (Qwen3.5, Gemma 4) through the engine, and prompts
longer than the model's context: tiny random checkpoints built from configs, CPU, no hub.

The policy of a composite checkpoint is its text model (``hf_load.load_model``); what the run
saves must be a checkpoint that ``cppo-bench run`` (the hf backend), plain
``AutoModelForCausalLM`` and vLLM's text class load: transformers 5 would otherwise write the
loading layout's names (``model.language_model.*``) beside a text config, which
Gemma4ForCausalLM cannot read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch


def _train(model: Path, out: Path, **overrides: Any):  # noqa: ANN202
    from trainers import train

    return train("pkpo", model=str(model), preset="demo", out=out, max_steps=1, **overrides)


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
def test_a_trained_composite_policy_saves_a_text_checkpoint_that_loads(
    family: str, tmp_path: Path
) -> None:
    from safetensors.torch import load_file
    from tiny_models import build
    from transformers import AutoModelForCausalLM

    from cppo_bench.backends.hf import load_model

    base = build(family, tmp_path / "base", context=4096)  # the demo prompts fit
    out = tmp_path / "run"
    outcome = _train(base, out, max_tokens=8)
    trained = load_file(str(out / "state" / "step-00000001" / "model.safetensors"))
    saved = load_file(str(outcome.checkpoint / "model.safetensors"))
    assert all(k.startswith(("model.", "lm_head.")) for k in saved)
    assert not any(k.startswith("model.language_model.") for k in saved), sorted(saved)[:3]
    for name, tensor in saved.items():  # the HF folder is the trained policy
        torch.testing.assert_close(tensor, trained[name])
    config = json.loads((outcome.checkpoint / "config.json").read_text())
    assert "text_config" not in config  # a text checkpoint
    loaded: Any = AutoModelForCausalLM.from_pretrained(outcome.checkpoint, output_loading_info=True)
    plain, info = loaded
    assert not info["missing_keys"] and not info["unexpected_keys"]
    harness, _, _ = load_model(str(outcome.checkpoint), dtype=torch.float32)
    for name, tensor in harness.state_dict().items():
        if name in saved:
            torch.testing.assert_close(tensor, saved[name])
    metrics = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["overlong_prompts"] == 0 and metrics["response_len"] > 0


def test_prompts_that_fill_the_context_are_counted_not_a_crash(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from tiny_models import build

    base = build("llama", tmp_path / "base", context=256)  # every demo prompt is longer
    out = tmp_path / "run"
    outcome = _train(base, out, max_tokens=8)
    assert outcome.steps == 1
    metrics = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["overlong_prompts"] > 0
    assert metrics["response_len"] == 0 and metrics["reward_mean"] == 0
    err = capfd.readouterr().err
    assert f"{metrics['overlong_prompts']} rollouts were not decoded" in err
