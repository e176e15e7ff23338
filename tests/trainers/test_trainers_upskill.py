"""UpSkill token-level mutual-information reward."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.core.upskill import enumerate_skills, mi_reward, sample_skills, upskill_reward


def test_mi_reward_matches_the_token_sum() -> None:
    gen = torch.Generator().manual_seed(0)
    lp = -torch.rand(3, 4, 6, generator=gen, dtype=torch.float64) * 3  # (B, skills, T)
    skill = torch.tensor([0, 3, 1])
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 0, 0]])
    got = mi_reward(lp, skill, mask, level="token")
    for b in range(3):
        expected = sum(
            float(lp[b, skill[b], t])
            - math.log(sum(math.exp(float(lp[b, z, t])) for z in range(4)) / 4)
            for t in range(6)
            if mask[b, t]
        )
        assert float(got[b]) == pytest.approx(expected, rel=1e-5)


def test_mi_reward_sign_and_stability() -> None:
    same = torch.full((1, 4, 5), -2.0)
    assert float(mi_reward(same, torch.tensor([2]), torch.ones(1, 5))) == pytest.approx(
        0.0, abs=1e-6
    )
    # the response is far likelier under its own skill: MI approaches log(n_skills) per token
    lp = torch.full((1, 4, 5), -1000.0)  # exp() of these underflows; logsumexp must not
    lp[0, 1] = -1.0
    r = mi_reward(lp, torch.tensor([1]), torch.ones(1, 5), level="token")
    assert torch.isfinite(r).all()
    assert float(r) == pytest.approx(5 * math.log(4), rel=1e-5)
    assert float(mi_reward(lp, torch.tensor([0]), torch.ones(1, 5))) < 0
    with pytest.raises(ValueError, match="out of range"):
        mi_reward(lp, torch.tensor([4]), torch.ones(1, 5))


def test_total_reward_and_uniform_seeded_skills() -> None:
    assert upskill_reward(torch.tensor([1.0, 0.0]), torch.tensor([0.1, -0.2])).tolist() == (
        pytest.approx([1.5, -1.0])
    )
    a, b = sample_skills(4000, seed=3), sample_skills(4000, seed=3)
    assert torch.equal(a, b) and not torch.equal(a, sample_skills(4000, seed=4))
    counts = torch.bincount(a, minlength=4).float()
    assert a.min() >= 0 and a.max() <= 3
    # chi-square with 3 dof: 16.3 is the 0.999 quantile
    assert float(((counts - 1000) ** 2 / 1000).sum()) < 16.3


def test_mi_reward_sequence_level_is_the_released_formula() -> None:
    # log p(y|x,z) - log mean_z' p(y|x,z'), p(y|.) = product over the response's tokens
    gen = torch.Generator().manual_seed(1)
    lp = -torch.rand(3, 4, 6, generator=gen, dtype=torch.float64) * 3
    skill = torch.tensor([0, 3, 1])
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 0, 0]])
    got = mi_reward(lp, skill, mask)
    for b in range(3):
        seq = [sum(float(lp[b, z, t]) for t in range(6) if mask[b, t]) for z in range(4)]
        expected = seq[int(skill[b])] - math.log(sum(math.exp(s) for s in seq) / 4)
        assert float(got[b]) == pytest.approx(expected, rel=1e-5)
    # differs from the token-level variant, and is bounded by log(n_skills)
    assert not torch.allclose(got, mi_reward(lp, skill, mask, level="token"))
    assert float(got.max()) <= math.log(4) + 1e-6
    with pytest.raises(ValueError, match="MI level"):
        mi_reward(lp, skill, mask, level="bogus")


def test_skills_are_enumerated() -> None:
    assert enumerate_skills(8, 4).tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
