"""vLLM rollouts: the engine's per-token log-probs reach the update, which logs the mean
|logp_vllm - logp_policy| and (``vllm_is_cap``) applies TRL's truncated IS correction.

No GPU here: a stand-in vLLM output feeds ``sampled_logprobs`` and a hand-made rollout carries
known log-probs through ``response_rows`` and ``policy_update`` (the real engine path)."""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from accelerate import Accelerator  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from cppo_bench.problem import Problem  # noqa: E402
from cppo_bench.problem import Test as ProblemTest  # noqa: E402
from trainers.core.loss import LossConfig, frozen_logprobs  # noqa: E402
from trainers.engine.algorithm import response_rows  # noqa: E402
from trainers.engine.config import ConfigError, TrainConfig  # noqa: E402
from trainers.engine.rewards import Scored  # noqa: E402
from trainers.engine.rollout import Rollout, RolloutRequest  # noqa: E402
from trainers.engine.rollout_vllm import sampled_logprobs  # noqa: E402
from trainers.engine.update import micro_batches, policy_update  # noqa: E402

T = 0.7


def test_sampled_logprobs_reads_vllms_per_token_entries() -> None:
    lp = types.SimpleNamespace
    out = lp(token_ids=[5, 6, 7], logprobs=[{5: lp(logprob=-0.5)}, {9: lp(logprob=-2.0)}, {}])
    got = sampled_logprobs(out)
    assert got is not None
    assert got[0] == -0.5 and all(x != x for x in got[1:])  # 6 and 7 unreported: NaN
    assert sampled_logprobs(lp(token_ids=[1], logprobs=None)) is None


def test_is_cap_needs_the_vllm_engine() -> None:
    assert TrainConfig(rollout_engine="vllm", vllm_is_cap=3.0).vllm_is_cap == 3.0
    with pytest.raises(ConfigError, match="vllm_is_cap"):
        TrainConfig(vllm_is_cap=3.0)
    with pytest.raises(ConfigError, match="temperature"):
        TrainConfig(temperature=0.0)


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=40,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(cfg).float()


@pytest.mark.parametrize("cap", [None, 1.5])
def test_update_logs_the_gap_and_applies_the_cap(cap: float | None) -> None:
    model = _model()
    problem = Problem("t", "p0", "s", (ProblemTest("", "1\n"),))
    prompts = [(1, 2, 3), (1, 4), (1, 5, 6, 7)]
    completions = [(8, 9, 10, 11), (12, 13), (14, 15, 16)]
    offsets = [0.3, -0.2, 0.1]  # the "vLLM" log-probs: the policy's plus a known shift
    scored = []
    for p, c, off in zip(prompts, completions, offsets, strict=True):
        rows = response_rows([_scored(problem, p, c, None)], [1.0])
        own = frozen_logprobs(model, micro_batches(rows, 8, 0)[0], T)[0, len(p) : len(p) + len(c)]
        scored.append(_scored(problem, p, c, tuple((own + off).tolist())))
    rows = response_rows(scored, [1.0, -0.5, 0.25])
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    cfg = LossConfig(beta=0.0, temperature=T, is_cap=cap)
    result = policy_update(
        Accelerator(cpu=True),
        model,
        None,
        opt,
        rows,
        loss_config=cfg,
        micro_rows=2,  # two micro-batches: the gap is summed over both before dividing
        pad_id=0,
        max_grad_norm=0.0,
        all_reduce_sum=lambda t: t,
    )
    n = sum(len(c) for c in completions)
    expected = sum(abs(off) * len(c) for off, c in zip(offsets, completions, strict=True)) / n
    assert result.loss["sampler_logp_gap"] == pytest.approx(expected, rel=1e-4)
    # the IS weight min(pi_old / pi_vllm, cap) = min(exp(-offset), cap) scales each row's loss
    weights = [min(float(torch.exp(torch.tensor(-o))), cap or float("inf")) for o in offsets]
    per_row = [-a * (w if cap else 1.0) for a, w in zip([1.0, -0.5, 0.25], weights, strict=True)]
    assert result.loss["loss"] == pytest.approx(sum(per_row) / 3, rel=1e-4)


def _scored(problem: Problem, p: tuple, c: tuple, lp: tuple | None) -> Scored:
    rollout = Rollout(RolloutRequest(problem, 0), p, c, "", "stop", lp)
    return Scored(rollout, 0.0, False, "")
