"""CPPO's SFT and RM stages in the engine's memory layouts (issue 43, item 3). SFT:
micro-batches, the head over chunks of planner positions, checkpointed layers and one-process
FSDP2 offload train the same planner as a plain full-batch loop written here with torch's own
cross-entropy (the oracle: no code shared with trainers/core/loss.py). RM: the head only where
each row ends gives the logits of a full forward, and a checkpointed fit the same losses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from tests.helpers.cppo_tiny import METHODS, problems, tiny_llama, word_tokenizer  # noqa: E402
from trainers.core.batch import Region, collate  # noqa: E402
from trainers.cppo_pipeline.sft import SFTLayout, sft_rows, train_sft  # noqa: E402
from trainers.cppo_pipeline.sft_funnel import SFTExample  # noqa: E402


def _setup():  # noqa: ANN202
    examples = [SFTExample(p, tuple(METHODS[p.problem_id][:2])) for p in problems()]
    tok = word_tokenizer([e.target for e in examples] + [p.statement for p in problems()])
    rows = sft_rows(tok, examples, 2)
    return tiny_llama(len(tok), seed=3), rows, tok.pad_token_id


def _oracle(model, rows, pad, batch: int, lr: float, seed: int) -> list[float]:  # noqa: ANN001
    """Full logits, F.cross_entropy over the planner tokens, AdamW, clip 1.0, same order."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    losses = []
    for idx in torch.randperm(len(rows), generator=gen).split(batch):
        b = collate([rows[i] for i in idx.tolist()], pad)
        logits = model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits
        mask = ((b.region == Region.PLANNER) & b.attention_mask.bool())[:, 1:]
        loss = torch.nn.functional.cross_entropy(logits[:, :-1][mask], b.input_ids[:, 1:][mask])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize(
    "layout",
    [
        SFTLayout(),
        SFTLayout(micro_rows=1, chunk=3, checkpointing=True),
        SFTLayout(micro_rows=3, chunk=512, offload=True),
    ],
    ids=["plain", "micro-chunk-ckpt", "offload"],
)
def test_every_layout_trains_the_same_planner_as_the_plain_loop(layout: SFTLayout) -> None:
    model, rows, pad = _setup()
    want_model = copy.deepcopy(model)
    want = _oracle(want_model, rows, pad, batch=4, lr=1e-3, seed=0)
    saved: list = []
    got = train_sft(model, rows, pad, batch_size=4, lr=1e-3, seed=0, layout=layout,
                    save=saved.append)  # fmt: skip
    assert got == pytest.approx(want, rel=1e-4, abs=1e-5)
    state = saved[0] if layout.offload else model.state_dict()
    ref = want_model.state_dict()
    gap = max(float((state[k].detach().cpu() - ref[k]).abs().max()) for k in ref)
    assert gap < 1e-5, gap
    assert (saved[0] is not None) == layout.offload


def test_the_rm_head_runs_only_where_rows_end_with_the_full_forwards_logits() -> None:
    from tests.helpers.cppo_tiny import tiny_llama, word_tokenizer
    from trainers.cppo_pipeline import reward_model as rmod
    from trainers.cppo_pipeline.negatives import LabelledTuple, make_negatives

    pos = [LabelledTuple(p, tuple(METHODS[p.problem_id][:2]), 1, "rules") for p in problems()]
    items = pos + make_negatives(pos)
    texts = [p.statement for p in problems()] + [t.text for t in items] + ["Problem: Methods:"]
    tok = word_tokenizer(texts)
    cfg = rmod.RMConfig(kind="generative", epochs=2, batch_size=4)
    rm = rmod.GenerativeVerifier(tiny_llama(len(tok), seed=1), tok, cfg)
    seen: list = []
    real = rm.module.forward

    def forward(*a: Any, **k: Any) -> Any:
        seen.append(k.get("logits_to_keep"))
        return real(*a, **k)

    rm.module.forward = forward
    with torch.no_grad():
        got = rm.logits(items[:5])
    rm.module.forward = real
    assert seen[0] is not None and len(seen[0]) <= 5  # not every position
    enc = [tok.encode(rm.prompt(t), add_special_tokens=False)[-cfg.max_tokens :] for t in items[:5]]
    want = []
    with torch.no_grad():  # the oracle: each row alone, full logits, its last position
        for e in enc:
            z = rm.module(input_ids=torch.tensor([e])).logits[0, -1]
            want.append(float(z[rm.yes_id] - z[rm.no_id]))
    assert got.tolist() == pytest.approx(want, abs=1e-4)
    plain = rmod.fit(rmod.GenerativeVerifier(tiny_llama(len(tok), seed=1), tok, cfg), items, cfg)
    ckpt_cfg = rmod.RMConfig(kind="generative", epochs=2, batch_size=4, checkpointing=True)
    ckpt = rmod.GenerativeVerifier(tiny_llama(len(tok), seed=1), tok, ckpt_cfg)
    assert rmod.fit(ckpt, items, ckpt_cfg) == pytest.approx(plain, rel=1e-5)
    assert not ckpt.module.is_gradient_checkpointing  # restored after the fit
