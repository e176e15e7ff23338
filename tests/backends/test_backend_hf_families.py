"""The hf backend on tiny random Llama, Qwen3.5 and Gemma 4 checkpoints (tests/helpers/tiny_models.py).

The oracle is transformers' own `generate` (greedy), run on each prompt alone with the
class transformers picks for the checkpoint (for Gemma 4 the whole multimodal model), so a
wrong cache row, a stale linear-attention state or a wrongly loaded text model shows as a
different continuation. Rows of each batch stop at different steps (different max_tokens),
which is what crashed Qwen3.5 (its linear-attention cache layers have no
batch_select_indices).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402

from cppo_bench.backends import BACKENDS, GenRequest, SamplingParams
from cppo_bench.backends import chat as chatmod
from cppo_bench.backends import hf as hfmod
from cppo_bench.backends.base import ModelLoadError
from tests.helpers import tiny_models

FAMILIES = ["llama", "qwen3_5", "gemma4", "gemma3"]
WORDS = tiny_models.WORDS
LIMITS = [3, 11, 6, 14, 1, 9]  # max_tokens per request: every row leaves at its own step


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("tiny_models")
    return {f: str(tiny_models.build(f, root / f)) for f in FAMILIES}


def prompts() -> list[str]:
    # different lengths, so the batch is left-padded unevenly too
    return [" ".join(WORDS[i : i + 2 + 3 * i]) for i in range(len(LIMITS))]


def requests(temperature: float = 0.0) -> list[GenRequest]:
    return [
        GenRequest(
            params=SamplingParams(temperature=temperature, max_tokens=n, seed=7 + i),
            messages=({"role": "user", "content": text},),
        )
        for i, (text, n) in enumerate(zip(prompts(), LIMITS, strict=True))
    ]


def whole_model(path: str):  # noqa: ANN201
    """The checkpoint's own architecture: the class it was saved from (for Qwen3.5 and
    Gemma 4 the multimodal one, whose weights need no renaming)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(path)
    composite = config.get_text_config() is not config
    auto = AutoModelForImageTextToText if composite else AutoModelForCausalLM
    # (with output_loading_info, (model, info): transformers' hints do not say so)
    loaded: Any = auto.from_pretrained(path, dtype=torch.float32, output_loading_info=True)
    model, info = loaded
    assert not info["missing_keys"]
    return model.eval()


def oracle(path: str, backend: hfmod.HFBackend, req: GenRequest) -> str:
    """transformers' greedy generate on this one prompt, with the checkpoint's own class."""
    model = whole_model(path)
    ids = chatmod.encode(backend.tokenizer, req, "auto", backend.enable_thinking)
    out = model.generate(
        torch.tensor([ids]),
        attention_mask=torch.ones(1, len(ids), dtype=torch.long),
        do_sample=False,
        max_new_tokens=req.params.max_tokens,
        eos_token_id=sorted(backend.eos_ids),
        pad_token_id=backend.pad_id,
    )
    new = out[0, len(ids) :].tolist()
    if new and new[-1] in backend.eos_ids:
        new = new[:-1]
    return backend.tokenizer.decode(new, skip_special_tokens=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_uneven_stops_match_transformers_generate(
    family: str, tiny: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    drops: list[int] = []
    real = hfmod.select_rows

    def counting(past, keep, device):  # noqa: ANN001 - spy on the row drop
        done = real(past, keep, device)
        drops.append(len(keep) if done else -1)
        return done

    monkeypatch.setattr(hfmod, "select_rows", counting)
    backend = BACKENDS.get("hf")(tiny[family], device="cpu", dtype="float32", batch_size=4)
    reqs = requests()
    results = backend.generate(reqs)
    assert len(drops) >= 2 and all(n > 0 for n in drops)  # finished rows really left
    for req, res in zip(reqs, results, strict=True):
        assert res.num_tokens <= req.params.max_tokens
        assert res.text == oracle(tiny[family], backend, req), (family, req.params.max_tokens)
    assert {r.finish_reason for r in results} <= {"stop", "length"}
    backend.close()


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
def test_sampled_rows_do_not_depend_on_their_batch(family: str, tiny: dict[str, str]) -> None:
    backend = BACKENDS.get("hf")(tiny[family], device="cpu", dtype="float32", batch_size=6)
    reqs = requests(temperature=1.0)
    batched = backend.generate(reqs)
    for i in (1, 3):  # the long ones, which decode on after their batch-mates left
        assert backend.generate([reqs[i]])[0].text == batched[i].text


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
def test_multimodal_checkpoints_load_their_text_model_only(
    family: str, tiny: dict[str, str]
) -> None:
    backend = BACKENDS.get("hf")(tiny[family], device="cpu", dtype="float32")
    names = [n for n, _ in backend.model.named_parameters()]
    towers = ("vision", "visual", "audio")
    assert not any(t in n for n in names for t in towers)
    whole = whole_model(tiny[family])
    assert any(t in n for n, _ in whole.named_parameters() for t in towers)
    ids = torch.tensor([chatmod.encode(backend.tokenizer, requests()[3])])
    with torch.no_grad():
        assert torch.allclose(backend.model(input_ids=ids).logits, whole(input_ids=ids).logits)
    assert backend.context == 256  # from the text config, not the composite one


def legacy_layout(folder: str, dest: Path) -> str:
    """A copy of a composite checkpoint with its text weights under `language_model.model.`
    (how Gemma 3 checkpoints on the hub are laid out)."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(folder, dest)
    new, old = "model.language_model.", "language_model.model."
    weights = load_file(dest / "model.safetensors")
    weights = {(old + k[len(new) :] if k.startswith(new) else k): v for k, v in weights.items()}
    assert any(k.startswith(old) for k in weights)
    save_file(weights, dest / "model.safetensors", metadata={"format": "pt"})
    return str(dest)


def test_a_composite_in_another_layout_falls_back_to_the_whole_model(
    tiny: dict[str, str], tmp_path: Path
) -> None:
    from transformers import AutoModelForCausalLM

    legacy = legacy_layout(tiny["gemma3"], tmp_path / "gemma3")
    # transformers' own answer: does the whole model's class map the legacy names back?
    loaded: Any = AutoModelForCausalLM.from_pretrained(legacy, output_loading_info=True)
    _, info = loaded
    if info["missing_keys"]:  # (transformers 5.5: no) then it is one clear error
        with pytest.raises(ModelLoadError, match="found no weights for"):
            BACKENDS.get("hf")(legacy, device="cpu")
        return
    backend = BACKENDS.get("hf")(legacy, device="cpu", dtype="float32")
    whole = whole_model(tiny["gemma3"])  # the original folder, in the current layout
    assert type(backend.model) is type(whole)  # every weight found, none random
    ids = torch.tensor([chatmod.encode(backend.tokenizer, requests()[3])])
    with torch.no_grad():
        assert torch.equal(backend.model(input_ids=ids).logits, whole(input_ids=ids).logits)


def test_missing_text_weights_are_one_error(tiny: dict[str, str], tmp_path) -> None:
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "gemma4"
    shutil.copytree(tiny["gemma4"], broken)
    weights = load_file(broken / "model.safetensors")
    layer = next(k for k in weights if "language_model.layers.1." in k)
    del weights[layer]
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=r"found no weights for 1 parameter\(s\).*layers\.1\."):
        BACKENDS.get("hf")(str(broken), device="cpu")


def test_no_library_warning_while_decoding(tiny: dict[str, str], capfd) -> None:
    backend = BACKENDS.get("hf")(tiny["llama"], device="cpu", batch_size=4)
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.generate(requests())
    err = capfd.readouterr().err
    assert [str(w.message) for w in caught] == []
    assert "deprecated" not in err.lower() and "warning" not in err.lower()


# -- enable_thinking -----------------------------------------------------------------------


def last_tokens(backend: hfmod.HFBackend, n: int) -> str:
    req = requests()[0]
    ids = chatmod.encode(backend.tokenizer, req, backend.chat, backend.enable_thinking)
    return backend.tokenizer.decode(ids[-n:])


def test_enable_thinking_is_false_by_default_and_a_named_option(tiny: dict[str, str]) -> None:
    make = BACKENDS.get("hf")
    off = make(tiny["qwen3_5"], device="cpu")
    assert off.enable_thinking is False
    assert last_tokens(off, 4) == "<think>\n\n</think>\n\n"  # an empty, closed think block
    on = make(tiny["qwen3_5"], device="cpu", enable_thinking=True)
    assert last_tokens(on, 2).endswith("<think>\n")
    template_default = make(tiny["qwen3_5"], device="cpu", enable_thinking=None)
    assert last_tokens(template_default, 2) == last_tokens(on, 2)
    # what the model saw is what generate reports
    req = requests()[0]
    expected = off.tokenizer.apply_chat_template(
        list(req.messages or ()), add_generation_prompt=True, enable_thinking=False, tokenize=False
    )
    assert off.generate([req])[0].prompt_tokens == len(off.tokenizer(expected)["input_ids"])


def test_enable_thinking_leaves_other_templates_alone(tiny: dict[str, str]) -> None:
    make = BACKENDS.get("hf")
    a = make(tiny["gemma4"], device="cpu")
    b = make(tiny["gemma4"], device="cpu", enable_thinking=None)
    assert last_tokens(a, 6) == last_tokens(b, 6)


def test_bad_enable_thinking_is_refused() -> None:
    with pytest.raises(ModelLoadError, match="enable_thinking must be true, false or null"):
        BACKENDS.get("hf")(None, enable_thinking="yes")
