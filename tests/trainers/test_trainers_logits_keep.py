"""The policy's head runs only where a trained token is predicted (transformers'
``logits_to_keep``), with the same log-probs and gradients as the full (B, T, V) logits."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("family", ["llama", "qwen3_5"])
def test_kept_logits_give_the_full_logits_answer(family: str, tmp_path: Path) -> None:
    from tiny_models import build

    from cppo_bench.backends.hf import load_model
    from trainers.core.loss import logprobs_from_logits, token_logprobs

    model, _, _ = load_model(str(build(family, tmp_path / family)), dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(4, model.config.get_text_config().vocab_size, (3, 12), generator=gen)
    mask = torch.ones_like(ids)
    only = torch.zeros_like(ids, dtype=torch.bool)
    only[0, 7:] = True  # rows score different spans (a prompt, then the completion)
    only[1, 9:11] = True
    # row 2 scores nothing: a padding row
    shapes: list[tuple[int, ...]] = []
    hook = model.register_forward_hook(lambda m, a, out: shapes.append(tuple(out.logits.shape)))
    got = token_logprobs(model, ids, mask, only, temperature=0.7)
    hook.remove()
    assert shapes[-1][1] == 5  # positions 6..10 only, not all 12
    (got.sum()).backward()
    g_kept = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    full = model(input_ids=ids, attention_mask=mask).logits
    want = logprobs_from_logits(full, ids, only, temperature=0.7)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    want.sum().backward()
    for n, p in model.named_parameters():
        if p.grad is not None and p.grad.abs().sum() > 0:
            torch.testing.assert_close(g_kept[n], p.grad, rtol=1e-4, atol=1e-6)
    assert bool((got[2] == 0).all()) and bool((got[0, :7] == 0).all())


def test_nothing_scored_still_runs_a_backward(tmp_path: Path) -> None:
    from tiny_models import build

    from cppo_bench.backends.hf import load_model
    from trainers.core.loss import token_logprobs

    model, _, _ = load_model(str(build("llama", tmp_path / "l")), dtype=torch.float32)
    ids = torch.tensor([[5, 6]])
    out = token_logprobs(model, ids, torch.ones_like(ids), torch.zeros_like(ids, dtype=torch.bool))
    assert out.requires_grad and float(out.abs().sum()) == 0.0
    out.sum().backward()  # the padding micro-batch of a DDP / FSDP process must not raise
