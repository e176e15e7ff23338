"""policy_loss on a tiny random-initialised Llama with a locally built tokenizer (no hub)."""

from __future__ import annotations

import copy

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from trainers.core.batch import PolicyBatch, Region, Row, Segment, collate
from trainers.core.cppo import PromptRollouts, SolverBranch, TupleRollout, build_cppo_rows
from trainers.core.grpo import make_reference
from trainers.core.loss import LossConfig, frozen_logprobs, policy_loss, token_logprobs

WORDS = (
    "[PAD] [UNK] problem: plan: solve: strategy greedy dp bfs sort binary search two pointers "
    "def f ( ) : return x y n + - * 0 1 2 for in range if else print input"
).split()


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")


@pytest.fixture()
def model(tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(cfg).float()


def ids(tokenizer: PreTrainedTokenizerFast, text: str) -> tuple[int, ...]:
    out = tuple(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert tokenizer.unk_token_id not in out, text
    return out


def cppo_batch(tokenizer: PreTrainedTokenizerFast) -> PolicyBatch:
    """Planner rows, solver rows, and one row that holds a plan AND a program."""
    t = lambda s: ids(tokenizer, s)  # noqa: E731
    tuples = []
    for j, plan in enumerate(["greedy dp bfs sort", "sort sort dp greedy"]):
        branches = tuple(
            SolverBranch(
                t(f"solve: problem: n strategy {s}"),
                t("def f ( n ) : return n + 1" if (i + j) % 2 else "print ( x )"),
                float((i + j) % 2),
            )
            for i, s in enumerate(plan.split())
        )
        # the second tuple repeats a strategy: the gate vetoes it, so R_plan differs per tuple
        tuples.append(TupleRollout(t("plan: problem: n"), t(plan), float(j == 0), branches))
    rows, _ = build_cppo_rows([PromptRollouts(tuple(tuples))])
    mixed = Row(
        (
            Segment(t("plan: problem: x")),
            Segment(t("two pointers binary search"), Region.PLANNER, 0.7),
            Segment(t("solve: strategy two pointers")),
            Segment(t("for x in range ( n ) : print ( x )"), Region.SOLVER, -1.3),
        )
    )
    return collate([*rows, mixed], pad_id=tokenizer.pad_token_id)


def logit_grads(model: LlamaForCausalLM, batch: PolicyBatch, cfg: LossConfig) -> torch.Tensor:
    """d loss / d logits, (B, T, V), captured with a hook on the LM head output."""
    seen: dict[str, torch.Tensor] = {}

    def hook(_module, _inp, out):
        out.retain_grad()
        seen["logits"] = out

    import trainers.core.loss as lossmod

    handle = model.lm_head.register_forward_hook(hook)
    # every position's logits, so gradients line up with (B, T) positions; that the kept-
    # positions path gives the same answer is tests/trainers/test_trainers_logits_keep.py's job
    real, lossmod.takes_logits_to_keep = lossmod.takes_logits_to_keep, lambda model: False
    try:
        model.zero_grad()
        loss, _ = policy_loss(model, batch, cfg)
        loss.backward()
    finally:
        handle.remove()
        lossmod.takes_logits_to_keep = real
    grad = seen["logits"].grad
    assert grad is not None
    return grad.detach().clone()


def test_each_region_advantage_moves_only_its_own_tokens(tokenizer, model) -> None:
    batch = cppo_batch(tokenizer)
    cfg = LossConfig(beta=0.0)

    # logits at position t-1 score token t: a region's gradient lives one position earlier
    def positions(region: Region) -> torch.Tensor:
        sel = torch.zeros_like(batch.region, dtype=torch.bool)
        sel[:, :-1] = batch.region[:, 1:] == region
        return sel

    planner_pos, solver_pos = positions(Region.PLANNER), positions(Region.SOLVER)
    for r in (Region.PLANNER, Region.SOLVER):
        assert (batch.advantages[batch.region == r] != 0).all(), "every trained token has signal"
    assert planner_pos.any() and solver_pos.any()
    assert (planner_pos & solver_pos).sum() == 0
    only = {
        r: batch.replace(advantages=batch.advantages * (batch.region == r))
        for r in (Region.PLANNER, Region.SOLVER)
    }
    g_plan = logit_grads(model, only[Region.PLANNER], cfg).abs().sum(-1)
    g_solve = logit_grads(model, only[Region.SOLVER], cfg).abs().sum(-1)
    assert (g_plan[~planner_pos] == 0).all() and (g_plan[planner_pos] > 0).all()
    assert (g_solve[~solver_pos] == 0).all() and (g_solve[solver_pos] > 0).all()
    # the mixed row (last) gets planner gradient on its plan and solver gradient on its program
    assert g_plan[-1].count_nonzero() > 0 and g_solve[-1].count_nonzero() > 0
    # together: one loss call is exactly the sum of the two region-restricted calls
    g_both = logit_grads(model, batch, cfg)
    g_sum = logit_grads(model, only[Region.PLANNER], cfg) + logit_grads(
        model, only[Region.SOLVER], cfg
    )
    assert torch.allclose(g_both, g_sum, atol=1e-7)


def test_on_policy_zero_kl_loss_is_minus_mean_advantage(tokenizer, model) -> None:
    batch = cppo_batch(tokenizer)
    mask = batch.loss_mask
    expected = -float((batch.advantages * mask).sum() / mask.sum())
    loss, diag = policy_loss(model, batch, LossConfig(beta=0.0, aggregation="token-mean"))
    assert float(loss) == pytest.approx(expected, abs=1e-6)
    # same with the KL term on and a reference identical to the policy: k3 is exactly zero
    ref = make_reference(model, torch.float32)
    with_ref = batch.replace(ref_logprobs=frozen_logprobs(ref, batch))
    loss_kl, diag_kl = policy_loss(model, with_ref, LossConfig(beta=0.01, aggregation="dapo"))
    assert float(loss_kl) == pytest.approx(expected, abs=1e-6)
    assert diag_kl.kl == 0.0 and diag.clip_fraction == 0.0
    assert diag.ratio_mean == pytest.approx(1.0)
    assert diag.tokens["planner"] == int(((batch.region == Region.PLANNER) & mask).sum())
    assert diag.tokens["solver"] == int(((batch.region == Region.SOLVER) & mask).sum())
    assert diag.tokens["planner"] + diag.tokens["solver"] == int(mask.sum())
    assert diag.adv_nonzero_rate == pytest.approx(float((batch.advantages != 0).sum() / mask.sum()))
    assert "tokens/solver" in diag.as_dict()


def test_sequence_and_constant_aggregation_on_policy(tokenizer, model) -> None:
    batch = cppo_batch(tokenizer)
    m = batch.loss_mask.float()
    per_row = (batch.advantages * m).sum(-1) / m.sum(-1)
    loss, _ = policy_loss(model, batch, LossConfig(beta=0.0, aggregation="sequence-mean"))
    assert float(loss) == pytest.approx(-float(per_row.mean()), abs=1e-6)
    loss, _ = policy_loss(model, batch, LossConfig(beta=0.0))  # the default: the study's
    assert float(loss) == pytest.approx(-float(per_row.mean()), abs=1e-6)
    loss, _ = policy_loss(model, batch, LossConfig(beta=0.0, aggregation="constant", max_tokens=64))
    expected = -float((batch.advantages * m).sum()) / (batch.input_ids.shape[0] * 64)
    assert float(loss) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_one_step_moves_the_completion_log_probability(tokenizer, model, sign: float) -> None:
    row = Row.prompt_completion(
        ids(tokenizer, "problem: n solve:"),
        ids(tokenizer, "def f ( n ) : return n * 2"),
        Region.RESPONSE,
        sign,
    )
    batch = collate([row], pad_id=tokenizer.pad_token_id)
    ref = make_reference(model)  # bf16 reference, as in training
    batch = batch.replace(
        old_logprobs=frozen_logprobs(model, batch), ref_logprobs=frozen_logprobs(ref, batch)
    )

    def completion_logp() -> float:
        with torch.no_grad():
            lp = token_logprobs(model, batch.input_ids, batch.attention_mask)
        return float((lp * batch.loss_mask).sum())

    before = completion_logp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss, diag = policy_loss(model, batch)  # default config: clip 0.2, beta 0.01, sequence-mean
    assert 0.0 <= diag.kl < 1e-2, "a bf16 reference stays close to the fp32 policy"
    loss.backward()
    opt.step()
    after = completion_logp()
    assert (after - before) * sign > 0


def test_stale_old_logprobs_trigger_the_clip(tokenizer, model) -> None:
    batch = cppo_batch(tokenizer)
    stale = copy.deepcopy(model)
    with torch.no_grad():
        for p in stale.parameters():
            p.add_(0.5 * torch.randn_like(p))
    off = batch.replace(old_logprobs=frozen_logprobs(stale, batch))
    _, diag = policy_loss(model, off, LossConfig(beta=0.0))
    assert 0.0 < diag.clip_fraction <= 1.0
    assert diag.ratio_mean != pytest.approx(1.0)


def test_missing_reference_with_beta_is_a_clear_error(tokenizer, model) -> None:
    batch = cppo_batch(tokenizer)
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(model, batch)
    with pytest.raises(ValueError, match="expected"):
        policy_loss(model, batch.replace(advantages=batch.advantages[:, :-1]), LossConfig(beta=0))


@pytest.mark.parametrize("trained", [Region.SOLVER, Region.PLANNER])
def test_solver_beta_puts_the_kl_on_solver_tokens_only(tokenizer, model, trained) -> None:
    # With zero advantages the loss is the KL term alone. Weighting only one region's tokens
    # must equal the plain, uniform-beta loss of a batch in which the other region's tokens are
    # not trained at all ("constant" aggregation: the denominator counts rows, not tokens).
    batch = cppo_batch(tokenizer)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.05 * torch.randn_like(p))
    zero = batch.replace(advantages=torch.zeros_like(batch.advantages))
    zero = zero.replace(ref_logprobs=frozen_logprobs(reference, zero))
    b = 0.3
    solver_only = (0.0, b) if trained == Region.SOLVER else (b, 0.0)
    weighted, diag = policy_loss(
        model,
        zero,
        LossConfig(
            beta=solver_only[0], solver_beta=solver_only[1], aggregation="constant", max_tokens=16
        ),
    )
    kept = torch.where(zero.region == trained, zero.region, torch.zeros_like(zero.region))
    masked = zero.replace(region=kept)
    plain, _ = policy_loss(model, masked, LossConfig(beta=b, aggregation="constant", max_tokens=16))
    assert float(weighted) > 0
    assert float(weighted) == pytest.approx(float(plain), rel=1e-6)
    assert LossConfig(beta=0.0, solver_beta=b).uses_reference
    assert not LossConfig(beta=0.0, solver_beta=0.0).uses_reference
    with pytest.raises(ValueError, match="solver_beta"):
        LossConfig(solver_beta=-1.0)
