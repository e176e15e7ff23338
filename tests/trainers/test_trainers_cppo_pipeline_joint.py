"""A real joint CPPO step on a tiny Llama: each region's tokens receive exactly their own
advantage (per-token gradient of the loss), and warm-up touches planner tokens only."""

from __future__ import annotations

import pytest
import torch

import trainers.core.loss as loss_mod
from tests.helpers.cppo_tiny import tiny_llama
from trainers.core.batch import Region, collate
from trainers.core.cppo import PromptRollouts, SolverBranch, TupleRollout
from trainers.core.cppo_ablation import ablation
from trainers.core.cppo_joint import joint_rows, update, warmup_rows
from trainers.core.loss import LossConfig

VOCAB = 40


def _rollouts() -> list[PromptRollouts]:
    g = torch.Generator().manual_seed(0)

    def ids(n: int) -> tuple[int, ...]:
        return tuple(int(x) for x in torch.randint(3, VOCAB, (n,), generator=g))

    prompts = []
    for p in range(2):
        tuples = []
        for m in range(2):
            # tuple m=0 has a passing branch and J=1, tuple m=1 fails everywhere
            rewards = (1.0, 0.0) if m == 0 else (0.0, 0.0)
            branches = tuple(SolverBranch(ids(4), ids(3 + i), r) for i, r in enumerate(rewards))
            tuples.append(TupleRollout(ids(5), ids(4 + p), 1.0 if m == 0 else float(p), branches))
        prompts.append(PromptRollouts(tuple(tuples)))
    return prompts


def test_joint_step_routes_each_advantage_to_its_own_region(monkeypatch) -> None:
    model = tiny_llama(VOCAB)
    step = joint_rows(_rollouts(), ablation("m2"))
    captured = {}
    real = loss_mod.token_logprobs

    def spy(model, input_ids, attention_mask, *rest):
        out = real(model, input_ids, attention_mask, *rest)
        out.retain_grad()
        captured["logp"] = out
        return out

    monkeypatch.setattr(loss_mod, "token_logprobs", spy)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cfg = LossConfig(beta=0.0, aggregation="token-mean")
    metrics = update(model, opt, step.rows, pad_id=0, loss_config=cfg)
    batch = collate(step.rows, 0)
    grad = captured["logp"].grad
    n = int(batch.loss_mask.sum())
    # on-policy, ratio 1, token-mean: d loss / d logp_t = -A_t / n for trained tokens, 0 elsewhere
    assert torch.allclose(grad * -n, batch.advantages, atol=1e-5)
    expected: dict[Region, set[float]] = {}
    for row in step.rows:
        seg = row.segments[1]
        expected.setdefault(seg.region, set()).add(round(seg.advantage, 5))
    for region in (Region.PLANNER, Region.SOLVER):
        sel = batch.region == region
        got = {round(float(a), 5) for a in (grad * -n)[sel]}
        assert got == expected[region]  # each region's tokens carry only its own advantages
    assert expected[Region.PLANNER] != expected[Region.SOLVER]
    assert metrics["param_step_norm"] > 0 and metrics["grad_norm"] > 0
    assert metrics["adv_nonzero/planner"] > 0 and metrics["adv_nonzero/solver"] > 0
    assert step.metrics["joint/valid_pass"] == 2 and step.metrics["r_out"] == pytest.approx(0.5)


def test_warmup_step_moves_planner_tokens_only() -> None:
    model = tiny_llama(VOCAB)
    step = warmup_rows(_rollouts())
    assert {r.segments[1].region for r in step.rows} == {Region.PLANNER}
    assert step.metrics["j_accept"] == pytest.approx(0.75)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    metrics = update(model, opt, step.rows, pad_id=0)
    assert metrics["tokens/solver"] == 0 and metrics["tokens/planner"] > 0
