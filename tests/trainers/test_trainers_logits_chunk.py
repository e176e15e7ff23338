"""The LM head over chunks of scored positions (``logits_chunk_tokens``), each recomputed in the
backward: the same log-probs and gradients as the kept-position logits, for every model family
the project trains (Llama untied and tied, Qwen3.5, Gemma 4 with its final-logit softcap), with
the head really fed at most N positions per call (counted on the matmuls that make logits,
forward and backward recompute)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: E402  (a dependency: never skipped)
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

FAMILIES = ["llama", "llama_tied", "qwen3_5", "gemma4"]
T = 0.7


class HeadCalls(TorchDispatchMode):
    """Rows of every matmul that makes logits (output's last dim = the vocabulary): the head's
    forward and, in the backward, its recompute (a dispatch mode, unlike a function mode or
    a module hook, also sees the ops autograd runs)."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab = vocab
        self.sizes: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        packet = getattr(func, "overloadpacket", None)
        if packet in _MATMULS and out.shape[-1] == self.vocab:
            self.sizes.append(out.numel() // self.vocab)
        return out


_MATMULS = {torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.bmm}


_MODELS: dict[str, Path] = {}


def _model(family: str, root: Path) -> Any:
    from tiny_models import build

    from cppo_bench.backends.hf import load_model

    if family == "llama_tied":  # SmolLM2 ties its head to the embeddings
        from transformers import AutoConfig, LlamaForCausalLM

        cfg = AutoConfig.from_pretrained(build("llama", root / "llama"))
        cfg.tie_word_embeddings = True
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg).float()
        assert model.lm_head.weight is model.model.embed_tokens.weight
        return model
    model, _, _ = load_model(str(build(family, root / family)), dtype=torch.float32)
    return model


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chunk_models")


def _batch(model: Any) -> tuple[Any, Any, Any]:
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(4, model.config.get_text_config().vocab_size, (3, 12), generator=gen)
    only = torch.zeros_like(ids, dtype=torch.bool)
    only[0, 7:] = True  # rows score different spans: 5 + 2 scored tokens
    only[1, 9:11] = True
    return ids, torch.ones_like(ids), only  # row 2 scores nothing: a padding row


def _grads(model: Any) -> dict[str, Any]:
    out = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("family", FAMILIES)
def test_chunked_logprobs_and_gradients_equal_the_kept_logits(
    family: str, dtype: str, root: Path
) -> None:
    from trainers.core.loss import token_logprobs

    model = _model(family, root).to(getattr(torch, dtype))
    vocab = model.get_output_embeddings().weight.shape[0]
    ids, mask, only = _batch(model)
    weights = torch.linspace(0.5, 1.5, 12)  # unequal weights per token
    want = token_logprobs(model, ids, mask, only, temperature=T)
    (want * weights).sum().backward()
    g_want = _grads(model)
    scored = int(only[:, 1:].sum())
    # fp32: other matmul shapes and another summation order of the head's weight gradient
    # (chunk by chunk) are fp32 round-off, which the deeper layers amplify to ~2e-5 of a
    # tensor's largest entry (Qwen3.5's linear attention); in float64 the gradients agree to
    # 1e-15, so the difference is round-off, not math
    g_tol = 1e-4 if dtype == "float32" else 1e-12
    for chunk in (1, 3, 64):  # 64 > the 7 scored positions: one chunk
        with HeadCalls(vocab) as calls:
            got = token_logprobs(model, ids, mask, only, temperature=T, chunk=chunk)
            forward = list(calls.sizes)
            (got * weights).sum().backward()
        # the chunking really happened, forward and in the backward's recompute (one chunk
        # that holds every position is not recomputed)
        assert forward == [min(chunk, scored - i) for i in range(0, scored, chunk)], forward
        calls_expected = 1 if scored <= chunk else 2 * math.ceil(scored / chunk)
        assert max(calls.sizes) <= chunk and len(calls.sizes) == calls_expected
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        g_got = _grads(model)
        assert g_got.keys() == g_want.keys()
        for n, g in g_want.items():
            scale = float(g.abs().max()) or 1.0
            torch.testing.assert_close(g_got[n], g, rtol=g_tol, atol=g_tol * scale, msg=n)
        assert bool((got[2] == 0).all()) and bool((got[0, :7] == 0).all())


@pytest.mark.parametrize("family", ["llama", "gemma4"])
def test_chunked_frozen_logprobs_and_policy_loss(family: str, root: Path) -> None:
    from trainers.core.batch import Region, Row, collate
    from trainers.core.loss import LossConfig, frozen_logprobs, policy_loss

    model = _model(family, root)
    vocab = model.get_output_embeddings().weight.shape[0]
    rows = [
        Row.prompt_completion([5, 6, 7], [8, 9, 10, 11], Region.RESPONSE, 1.0),
        Row.prompt_completion([5, 9], [12, 13], Region.RESPONSE, -1.0),
    ]
    batch = collate(rows, 0)
    with HeadCalls(vocab) as calls:
        old = frozen_logprobs(model, batch, T, chunk=2)
    assert calls.sizes == [2, 2, 2] and not old.requires_grad
    torch.testing.assert_close(old, frozen_logprobs(model, batch, T), rtol=1e-5, atol=1e-6)
    stale = batch.replace(old_logprobs=old + 0.3 * torch.randn_like(old) * batch.loss_mask)
    out = {}
    for chunk in (0, 2):
        cfg = LossConfig(beta=0.0, temperature=T, logits_chunk_tokens=chunk)
        loss, diag = policy_loss(model, stale, cfg)
        loss.backward()
        out[chunk] = (loss.detach(), diag.clip_fraction, _grads(model))
    torch.testing.assert_close(out[2][0], out[0][0], rtol=1e-5, atol=0.0)
    assert out[2][1] == out[0][1]
    for n, g in out[0][2].items():
        scale = float(g.abs().max()) or 1.0
        torch.testing.assert_close(out[2][2][n], g, rtol=1e-4, atol=1e-4 * scale, msg=n)


def test_nothing_scored_still_builds_a_graph(root: Path) -> None:
    from trainers.core.loss import token_logprobs

    model = _model("llama", root)
    ids = torch.tensor([[5, 6], [7, 8]])
    none = torch.zeros_like(ids, dtype=torch.bool)
    out = token_logprobs(model, ids, torch.ones_like(ids), none, chunk=4)
    assert out.requires_grad and out.shape == (2, 2) and not out.detach().any()
    out.sum().backward()  # the padding micro-batch of a DDP / FSDP process must not raise
    # every parameter the unchunked padding batch reaches gets a (zero) gradient here too
    assert model.lm_head.weight.grad is not None
    assert float(model.lm_head.weight.grad.abs().sum()) == 0.0
    one = token_logprobs(model, ids[:, :1], torch.ones_like(ids[:, :1]), none[:, :1], chunk=4)
    assert one.shape == (2, 1) and one.requires_grad  # one-token rows: nothing to predict


def test_gemma_softcap_is_applied_once_and_restored(root: Path, monkeypatch) -> None:  # noqa: ANN001
    import contextlib

    from trainers.core import chunked_logprobs
    from trainers.core.loss import token_logprobs

    model = _model("gemma4", root)
    assert chunked_logprobs.final_softcap(model) == 30.0
    ids, mask, only = _batch(model)
    token_logprobs(model, ids, mask, only, temperature=T, chunk=3)
    assert model.config.final_logit_softcapping == 30.0  # switched back on after the call
    # were the model's own softcap left on, its logits would no longer be the chunks'
    # log-probs: refused in one line, not trained on
    monkeypatch.setattr(chunked_logprobs, "_softcap_off", lambda m: contextlib.nullcontext())
    with pytest.raises(ValueError, match="logits_chunk_tokens: 0"):
        token_logprobs(model, ids, mask, only, temperature=T, chunk=3)


def test_a_logit_transform_after_the_head_is_refused(root: Path) -> None:
    from types import SimpleNamespace

    from trainers.core.loss import token_logprobs

    inner = _model("llama", root)

    class Scaled(torch.nn.Module):  # a family that scales its logits after the head
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner
            self.config = inner.config

        def get_output_embeddings(self) -> Any:
            return self.inner.lm_head

        def forward(self, input_ids: Any, attention_mask: Any, logits_to_keep: Any = 0) -> Any:
            kw = {"attention_mask": attention_mask, "logits_to_keep": logits_to_keep}
            return SimpleNamespace(logits=self.inner(input_ids=input_ids, **kw).logits * 0.5)

    ids, mask, only = _batch(inner)
    token_logprobs(Scaled(), ids, mask, only, temperature=T)  # unchunked: fine
    with pytest.raises(ValueError, match="changed its output after the head"):
        token_logprobs(Scaled(), ids, mask, only, temperature=T, chunk=3)


def test_upskill_completion_logprobs_chunked_over_several_groups(root: Path) -> None:
    """The engine's no-grad completion scorer (UpSkill's MI term) with more pairs than one
    micro-batch: chunked == unchunked, each pair's completion span."""
    from trainers.engine.update import completion_logprobs

    model = _model("llama", root)
    pairs = [([5, 6, 7], [8, 9, 10, 11]), ([5, 9], [12, 13]), ([4, 4, 6, 7], [9])]
    plain = completion_logprobs(model, pairs, 0, 2, T)
    chunked = completion_logprobs(model, pairs, 0, 2, T, chunk=3)
    assert [len(x) for x in chunked] == [4, 2, 1]
    for a, b in zip(chunked, plain, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_benchmark_prints_a_step_too_small_to_measure() -> None:
    # a tiny step may never raise the process's peak RSS (ru_maxrss): its peak is 0 or below,
    # and the table must say so, not divide by it (it crashed the smallest mode under load)
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "logits_chunk.py"
    spec = importlib.util.spec_from_file_location("logits_chunk_script", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.ratio(4096, 0).startswith("no ratio")
    assert script.ratio(-4096, 8192).startswith("no ratio")
    assert script.ratio(4096, 8192) == "0.50x"
