"""The weight sync's name map and gathering, and the vLLM rollout's plumbing (engine options,
RNG, close), on the CPU without vLLM: the names are checked against the hub-shaped tiny
checkpoints the real engine loads (vLLM builds the checkpoint's own class, whose mapper
reads ``model.language_model.*``: vLLM 0.32's Qwen3_5ForConditionalGeneration has no rule
for a bare ``model.layers.*``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


def _disk_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118


@pytest.mark.parametrize("family", ["llama", "qwen3_5", "gemma4"])
def test_policy_names_map_onto_the_checkpoint_vllm_loads(family: str, tmp_path: Path) -> None:
    import json

    from tiny_models import build

    from cppo_bench.backends.hf import load_model
    from trainers.engine.weight_sync import full_tensors, layout, vllm_names

    folder = build(family, tmp_path / family)
    policy, _, _ = load_model(str(folder), dtype=torch.float32)
    names = vllm_names(json.loads((folder / "config.json").read_text()))
    disk = _disk_shapes(folder)
    assert layout(policy) == "plain"
    sent = {names(k): tuple(t.shape) for k, t in full_tensors(policy)}
    tied = {"lm_head.weight"} if policy.config.get_text_config().tie_word_embeddings else set()
    for k, shape in sent.items():
        if k in tied and k not in disk:
            continue  # a tied head is the embedding on disk
        assert disk.get(k) == shape, (family, k)
    if family == "llama":
        assert set(sent) == set(disk)
        return
    text_on_disk = {k for k in disk if k.startswith("model.language_model.")}
    assert text_on_disk <= set(sent)  # every text weight of the checkpoint is sent
    # without the map the text policy's names match nothing the composite's mapper reads
    raw = {k for k, _ in full_tensors(policy)}
    assert not any(k in disk for k in raw if k.startswith("model."))


def test_an_unknown_composite_is_one_clear_error() -> None:
    from trainers.engine.weight_sync import vllm_names

    with pytest.raises(ValueError, match="no name map is registered"):
        vllm_names({"model_type": "future_vl", "text_config": {"model_type": "x"}})
    assert vllm_names({"model_type": "llama"})("model.layers.0.x") == "model.layers.0.x"


class _FakeLLM:
    """Records what the rollout engine hands vLLM; reseeds the global RNG like vLLM's worker."""

    made: list[_FakeLLM] = []

    def __init__(self, **kwargs: object) -> None:
        torch.manual_seed(0)  # vLLM's set_random_seed(model_config.seed)
        self.kwargs = kwargs
        self.loaded: list[tuple[str, tuple[int, ...]]] = []
        self.calls: list[str] = []
        self.llm_engine = types.SimpleNamespace(
            engine_core=types.SimpleNamespace(shutdown=lambda: self.calls.append("shutdown"))
        )
        _FakeLLM.made.append(self)

    def apply_model(self, fn):  # noqa: ANN001, ANN201
        model = types.SimpleNamespace(
            load_weights=lambda weights: self.loaded.extend((n, tuple(t.shape)) for n, t in weights)
        )
        return [fn(model)]

    def reset_prefix_cache(self) -> None:
        self.calls.append("reset")

    def sleep(self, level: int = 1) -> None:
        self.calls.append(f"sleep{level}")

    def wake_up(self, tags: list[str] | None = None) -> None:
        self.calls.append(f"wake:{','.join(tags or [])}")


def test_vllm_rollout_options_rng_names_and_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_models import build
    from transformers import AutoTokenizer

    from cppo_bench.backends.hf import load_model
    from trainers.engine import rollout_vllm

    fake = types.ModuleType("vllm")
    fake.LLM = _FakeLLM  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", fake)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):  # set by the engine: restored after
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    folder = build("qwen3_5", tmp_path / "q")
    policy, _, _ = load_model(str(folder), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(folder)
    options = {
        "model_path": str(folder),
        "gpu_memory_utilization": 0.25,
        "max_model_len": 512,
        "enforce_eager": True,
        "sleep": True,
        "process_index": 1,
        "local_process_index": 1,
        "num_processes": 2,
    }
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    engine = rollout_vllm.make_vllm_rollout(policy, tok, options)
    # building the engine reseeded torch (as vLLM does); a resumed RNG state survives it
    torch.testing.assert_close(torch.rand(3), expected)
    llm = _FakeLLM.made[-1]
    kw = llm.kwargs
    assert kw["distributed_executor_backend"] == "external_launcher"  # one engine per rank
    assert kw["max_model_len"] == 512 and kw["enforce_eager"] is True
    assert kw["enable_sleep_mode"] is True and kw["gpu_memory_utilization"] == 0.25
    assert kw["seed"] == 1
    assert kw["language_model_only"] is True  # a composite: no tower built, text prompts
    import os

    assert os.environ["RANK"] == "1" and os.environ["LOCAL_RANK"] == "1"
    names = {n for n, _ in llm.loaded}
    assert names and all(not n.startswith("model.layers.") for n in names)
    assert "model.language_model.embed_tokens.weight" in names
    assert llm.calls == ["reset"]  # built awake, synced; it sleeps only when the trainer says
    engine.sleep()  # the protocol itself: tests/trainers/test_trainers_vllm_sleep.py
    assert llm.calls[-1] == "sleep2"
    engine.close()
    assert "shutdown" in llm.calls and getattr(engine, "llm", None) is None
    engine.close()  # twice is harmless


def test_engine_kwargs_single_process_keeps_the_uniprocess_executor(monkeypatch) -> None:
    from trainers.engine.rollout_vllm import engine_kwargs

    kw = engine_kwargs("m", {"num_processes": 1})
    assert "distributed_executor_backend" not in kw and "max_model_len" not in kw
    assert kw["enforce_eager"] is False and "enable_sleep_mode" not in kw
    assert "language_model_only" not in kw  # a text checkpoint has no modality to switch off


def test_vllm_rollout_skips_prompts_that_fill_its_context(tmp_path: Path) -> None:
    """vLLM refuses a whole batch when one prompt is longer than max_model_len: such a
    prompt is not sent, its rollout is empty with the finish reason CONTEXT_FULL, and the
    others keep their order."""
    from tiny_models import build
    from transformers import AutoTokenizer

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import CONTEXT_FULL, RolloutRequest
    from trainers.engine.rollout_vllm import VLLMRollout

    tok = AutoTokenizer.from_pretrained(build("llama", tmp_path / "l"))
    sent: list[list[int]] = []

    def generate(prompts, params, use_tqdm=False):  # noqa: ANN001, ANN202, ARG001
        sent.extend(p["prompt_token_ids"] for p in prompts)
        return [
            types.SimpleNamespace(
                outputs=[types.SimpleNamespace(token_ids=[7], text="x", finish_reason="stop")]
            )
            for _ in prompts
        ]

    engine = VLLMRollout.__new__(VLLMRollout)  # the engine without a real vLLM behind it
    engine._vllm = types.SimpleNamespace(SamplingParams=lambda **kw: kw)
    engine.tokenizer, engine.chat, engine.enable_thinking = tok, "auto", False
    engine.sleep_mode, engine.asleep, engine.logprobs = False, False, False
    engine.llm = types.SimpleNamespace(
        generate=generate,
        llm_engine=types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=40)),
    )
    prob = Problem(benchmark="t", problem_id="p", statement="s", tests=(Test("", ""),))
    texts = ["short", " ".join(["word"] * 60), "also short"]
    reqs = [RolloutRequest(prob, seed=i, prompt=t) for i, t in enumerate(texts)]
    out = engine.generate(reqs, SamplingParams(temperature=1.0, top_p=1.0, max_tokens=4))
    assert [r.finish_reason for r in out] == ["stop", CONTEXT_FULL, "stop"]
    assert out[1].completion_ids == () and out[1].text == "" and len(out[1].prompt_ids) >= 40
    assert len(sent) == 2 and all(len(ids) < 40 for ids in sent)
    assert out[0].completion_ids == (7,) and out[2].prompt_ids == tuple(sent[1])


def test_vllm_sleep_where_the_platform_has_none_is_one_config_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.32 on the CPU refuses sleep mode deep in its config validation (a pydantic
    error whose first line says nothing); the engine asks vLLM's platform first."""
    from tiny_models import build
    from transformers import AutoTokenizer

    from trainers.engine.rollout_vllm import VLLMRollout

    fake = types.ModuleType("vllm")
    fake.__path__ = []
    fake.LLM = _FakeLLM  # type: ignore[attr-defined]
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_sleep_mode_available=lambda: False
    )
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    folder = build("llama", tmp_path / "l")
    tok = AutoTokenizer.from_pretrained(folder)
    built = len(_FakeLLM.made)
    with pytest.raises(ValueError, match="config vllm_sleep: this platform's vLLM has no sleep"):
        VLLMRollout(str(folder), tok, {"sleep": True})
    assert len(_FakeLLM.made) == built  # refused before an engine was built
