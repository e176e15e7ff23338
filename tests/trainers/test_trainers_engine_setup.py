"""What the loop hands the rollout engine and sets around it, through a real run of the toy
task with a recording engine (the hf engine underneath, built as vLLM's is: it sets the fp32
matmul precision to "highest" for the whole process):

* vLLM's context: ``vllm_max_model_len: 0`` meant the model's full context (262,144 tokens for
  Qwen3.5), which vLLM checks fits one request's KV cache at start-up, more than a 9B policy
  leaves (issue 35 item 4). The default is now the longest training prompt, as the rollouts
  encode it, plus max_tokens, plus what the algorithm's prompts carry, at most the model's.
* the update runs at ``matmul_precision`` (default "high": TF32), set after the engine is built
  (issue 35 item 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def test_the_engine_gets_the_longest_prompt_and_the_update_its_precision(
    tmp_path: Path,
    toy_model: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toy_task import run

    from trainers.engine import rollout, update
    from trainers.engine.rollout_engines import ROLLOUT_ENGINES

    seen: dict[str, Any] = {"prompts": []}

    def recording(model: Any, tok: Any, options: Any) -> Any:
        seen["options"] = dict(options)
        torch.set_float32_matmul_precision("highest")  # what building vLLM's engine does
        engine = rollout.make_hf_rollout(model, tok, options)
        real = engine.generate

        def generate(reqs: Any, sampling: Any) -> Any:
            out = real(reqs, sampling)
            seen["prompts"] += [len(r.prompt_ids) for r in out]
            return out

        engine.generate = generate  # type: ignore[method-assign, assignment]  # (a spy)
        return engine

    real_update = update.policy_update

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen["precision"] = torch.get_float32_matmul_precision()
        return real_update(*args, **kwargs)

    monkeypatch.setitem(ROLLOUT_ENGINES._entries, "recording", recording)
    monkeypatch.setattr(update, "policy_update", spy)
    before = torch.get_float32_matmul_precision()
    try:
        # 4 problems, all in the one step: every prompt is rolled out
        run(tmp_path / "run", toy_model, steps=1, problems=4, rollout_engine="recording")
    finally:
        torch.set_float32_matmul_precision(before)
    longest = seen["options"]["longest_prompt"]()
    assert longest == max(seen["prompts"])  # the longest prompt the rollouts really encoded
    assert seen["options"]["max_tokens"] == 1 and seen["options"]["max_model_len"] is None
    assert seen["precision"] == "high"  # the config's, although the engine set "highest"


def test_vllm_context_default_is_prompt_plus_tokens_capped_by_the_model() -> None:
    from trainers.engine.rollout_vllm import PROMPT_SLACK, engine_kwargs

    qwen = {"model_type": "qwen3_5", "text_config": {"max_position_embeddings": 262144}}
    opts = {"longest_prompt": lambda: 700, "max_tokens": 2048}
    assert engine_kwargs("m", opts, True, qwen)["max_model_len"] == 700 + 2048 + PROMPT_SLACK
    short = {"max_position_embeddings": 1024}
    assert engine_kwargs("m", opts, False, short)["max_model_len"] == 1024  # the model's cap
    assert engine_kwargs("m", {**opts, "max_model_len": 64}, True, qwen)["max_model_len"] == 64


def test_cppo_prompts_carry_a_plan() -> None:
    from trainers.algorithms.cppo import CPPO, CPPOAlgoConfig
    from trainers.engine.algorithm import Algorithm

    assert CPPO(CPPOAlgoConfig(k=2, m=2)).prompt_carries(2048) == 2048
    assert Algorithm(None).prompt_carries(2048) == 0
