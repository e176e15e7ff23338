"""GRPO pieces: group-normalised advantages, clipped surrogate, k3 KL, aggregation, precision."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from trainers.core.grpo import (
    aggregate,
    check_trainable_fp32,
    clipped_surrogate,
    group_normalised_advantages,
    kl_k3,
    make_reference,
)

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(value=finite, sizes=st.lists(st.integers(1, 8), min_size=1, max_size=5))
def test_constant_groups_get_exactly_zero(value: float, sizes: list[int]) -> None:
    ids = torch.cat([torch.full((n,), 10 * g) for g, n in enumerate(sizes)])
    r = torch.full(ids.shape, value, dtype=torch.float64)
    for std in ("bessel", "population"):
        assert (group_normalised_advantages(r, ids, std=std) == 0).all()


@settings(max_examples=100, deadline=None)
@given(
    groups=st.lists(st.lists(finite, min_size=2, max_size=8), min_size=1, max_size=5),
    std=st.sampled_from(["bessel", "population"]),
)
def test_vectorised_matches_per_group_formula(groups: list[list[float]], std: str) -> None:
    # interleave the groups and use sparse, unordered ids to exercise the scatter
    ids = torch.tensor([7 * (len(groups) - g) for g, grp in enumerate(groups) for _ in grp])
    r = torch.tensor([x for grp in groups for x in grp], dtype=torch.float64)
    perm = torch.randperm(len(r), generator=torch.Generator().manual_seed(0))
    got = group_normalised_advantages(r[perm], ids[perm], std=std)  # type: ignore[arg-type]
    expected = []
    for grp in groups:
        m = sum(grp) / len(grp)
        dof = len(grp) - 1 if std == "bessel" else len(grp)
        sd = math.sqrt(sum((x - m) ** 2 for x in grp) / dof)
        flat = max(grp) == min(grp)
        expected += [0.0 if flat else (x - m) / (sd + 1e-6) for x in grp]
    assert got.tolist() == pytest.approx(torch.tensor(expected)[perm].tolist(), abs=1e-6)


def test_bessel_versus_population_std() -> None:
    r = torch.tensor([1.0, 0, 0, 0])
    ids = torch.zeros(4, dtype=torch.long)
    bessel = group_normalised_advantages(r, ids)  # documented default
    pop = group_normalised_advantages(r, ids, std="population")
    assert bessel.tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5], abs=1e-5)
    assert pop.tolist() == pytest.approx(
        [math.sqrt(3), -1 / math.sqrt(3)] + [-1 / math.sqrt(3)] * 2, abs=1e-5
    )
    # population-normalised groups have unit mean square, Bessel ones (n-1)/n
    assert float((pop**2).mean()) == pytest.approx(1.0, abs=1e-4)
    assert float((bessel**2).mean()) == pytest.approx(0.75, abs=1e-4)
    with pytest.raises(ValueError, match="bessel"):
        group_normalised_advantages(r, ids, std="sample")  # type: ignore[arg-type]


def test_single_member_group_is_zero() -> None:
    adv = group_normalised_advantages(torch.tensor([3.0, 1.0, 0.0]), torch.tensor([0, 1, 1]))
    assert adv[0] == 0 and adv[1] > 0 > adv[2]


def test_clipped_surrogate_values_and_gradients() -> None:
    old = torch.zeros(4)
    logp = torch.log(torch.tensor([1.0, 1.5, 0.5, 1.1])).requires_grad_(True)
    adv = torch.tensor([2.0, 1.0, -1.0, -1.0])
    loss, clipped = clipped_surrogate(logp, old, adv, 0.2)
    # ratio 1 -> -A; ratio 1.5 with A>0 -> clipped at 1.2; ratio .5 with A<0 -> clipped at .8
    assert loss.tolist() == pytest.approx([-2.0, -1.2, 0.8, 1.1], abs=1e-6)
    assert clipped.tolist() == [False, True, True, False]
    loss.sum().backward()
    # d(-rho A)/dlogp = -rho A where unclipped, 0 where the clip is active
    assert logp.grad is not None
    assert logp.grad.tolist() == pytest.approx([-2.0, 0.0, 0.0, 1.1], abs=1e-6)


def test_k3_is_zero_at_equality_nonnegative_and_unbiased() -> None:
    x = torch.randn(100)
    assert (kl_k3(x, x) == 0).all()
    assert (kl_k3(x, torch.randn(100)) >= 0).all()
    # E_{y ~ pi}[k3(y)] = KL(pi || ref) exactly, summing over a categorical's support
    pi = torch.softmax(torch.randn(7, dtype=torch.float64), 0)
    ref = torch.softmax(torch.randn(7, dtype=torch.float64), 0)
    expected_kl = float((pi * (pi.log() - ref.log())).sum())
    assert float((pi * kl_k3(pi.log(), ref.log())).sum()) == pytest.approx(expected_kl, rel=1e-9)


def test_aggregation_modes() -> None:
    per_token = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    assert float(aggregate(per_token, mask, "token-mean")) == pytest.approx(10 / 4)
    assert float(aggregate(per_token, mask)) == pytest.approx((2 + 4) / 2)  # sequence-mean
    assert float(aggregate(per_token, mask, "sequence-mean")) == pytest.approx((2 + 4) / 2)
    assert float(aggregate(per_token, mask, "constant", max_tokens=8)) == pytest.approx(10 / 16)
    with pytest.raises(ValueError, match="max_tokens"):
        aggregate(per_token, mask, "constant")
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate(per_token, mask, "sum")  # type: ignore[arg-type]


def test_adamw_step_at_lr_5e7_underflows_bf16_but_not_fp32() -> None:
    # the reason trainable weights are fp32: the same step is lost in bf16
    moved = {}
    for dtype in (torch.float32, torch.bfloat16):
        w = nn.Parameter(torch.full((16,), 0.02, dtype=dtype))
        opt = torch.optim.AdamW([w], lr=5e-7, weight_decay=0.0)
        (w.float() * torch.linspace(-1, 1, 16)).sum().backward()
        before = w.detach().clone()
        opt.step()
        moved[dtype] = bool((w.detach() != before).any())
    assert moved == {torch.float32: True, torch.bfloat16: False}


def test_reference_copy_and_fp32_check() -> None:
    first = nn.Linear(4, 4)
    model = nn.Sequential(first, nn.Linear(4, 2))
    ref: Any = make_reference(model)  # (a copy of the Sequential: indexable)
    assert all(p.dtype == torch.bfloat16 and not p.requires_grad for p in ref.parameters())
    assert not ref.training
    check_trainable_fp32(model)  # fp32 trainable: fine
    with torch.no_grad():
        first.weight.add_(1.0)
    assert not torch.equal(first.weight.bfloat16(), ref[0].weight), "reference is a copy"
    half: Any = make_reference(model, torch.float16)
    assert half[0].weight.dtype == torch.float16
    with pytest.raises(ValueError, match="float32"):
        check_trainable_fp32(model.to(torch.bfloat16))
