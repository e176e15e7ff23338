"""CPPO credit assignment: solver / planner advantages, ablation switches, batch assembly."""

from __future__ import annotations

import random

import pytest
import torch

from trainers.core.batch import Region, Row, Segment, collate
from trainers.core.cppo import (
    CPPOConfig,
    PlanReward,
    PromptRollouts,
    SolverBranch,
    TupleRollout,
    build_cppo_rows,
    outcome_reward,
    plan_reward,
    planner_advantages,
    reinforce_loo_advantages,
    solver_advantages,
    warmup_reward,
)
from trainers.core.grpo import group_normalised_advantages


def test_solver_advantages_normalise_within_each_tuple() -> None:
    r = torch.tensor([[1.0, 0, 0, 0], [1.0, 1, 1, 1], [0.0, 1, 0, 1]])
    a = solver_advantages(r)
    assert a[0].tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5], abs=1e-5)
    assert (a[1] == 0).all(), "an all-pass tuple carries no solver signal"
    assert a[2].tolist() == pytest.approx([-0.866, 0.866, -0.866, 0.866], abs=1e-3)
    pop = solver_advantages(r, std="population")
    assert pop[0, 0] == pytest.approx(3**0.5, abs=1e-5)


def test_outcome_and_plan_rewards_with_switches() -> None:
    branch = torch.tensor([[0.0, 0.5, 1.0, 0.0], [0.0, 0, 0, 0], [0.2, 0.1, 0, 0]])
    gate = torch.tensor([0.0, 1.0, 1.0])
    r_out = outcome_reward(branch)
    assert r_out.tolist() == pytest.approx([1.0, 0.0, 0.2])
    assert plan_reward(gate, r_out).tolist() == pytest.approx([0.0, 0.0, 0.2])  # J * R_out
    assert plan_reward(gate, r_out, PlanReward.NO_GATE).tolist() == pytest.approx([1.0, 0, 0.2])
    assert plan_reward(gate, r_out, PlanReward.GATE_ONLY).tolist() == [0.0, 1.0, 1.0]
    assert warmup_reward(gate).tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="needs R_out"):
        plan_reward(gate, None, PlanReward.GATED)


@pytest.mark.parametrize("m", [2, 4, 8])
def test_planner_advantages_normalise_across_the_m_tuples_of_a_prompt(m: int) -> None:
    r_plan = torch.rand(3, m, generator=torch.Generator().manual_seed(m))
    a = planner_advantages(r_plan)
    ids = torch.arange(3).repeat_interleave(m)
    expected = group_normalised_advantages(r_plan.reshape(-1), ids).view(3, m)
    assert torch.allclose(a, expected)
    assert torch.allclose(a.mean(dim=1), torch.zeros(3), atol=1e-6)


def test_m1_is_single_sample_reinforce_by_default() -> None:
    # study: M = 1 replaces Eq. planner-adv with single-sample REINFORCE: A = R_plan as it is
    r_plan = torch.tensor([[1.0], [0.0], [0.5]])
    assert planner_advantages(r_plan).view(-1).tolist() == [1.0, 0.0, 0.5]
    # one prompt on a process (8 prompts on 8 GPUs) is fine: nothing is shared between prompts
    assert planner_advantages(torch.tensor([[0.25]])).tolist() == [[0.25]]
    rows, _ = build_cppo_rows(_rollouts(1, 1, 2, seed=3))
    plan = [r for r in rows if r.segments[1].region == Region.PLANNER]
    assert len(plan) == 1
    prompts = _rollouts(1, 1, 2, seed=3)
    t = prompts[0].tuples[0]
    assert plan[0].segments[1].advantage == pytest.approx(
        t.gate * max(b.reward for b in t.branches)
    )


def test_m1_loo_option_uses_the_leave_one_out_baseline_over_prompts() -> None:
    r_plan = torch.tensor([[1.0], [0.0], [0.5]])
    a = planner_advantages(r_plan, m1_baseline="loo")
    assert a.view(-1).tolist() == pytest.approx([0.75, -0.75, 0.0])
    # unbiased: a sample's own reward never enters its baseline (dA_p / dR_p = 1 exactly)
    bumped = reinforce_loo_advantages(torch.tensor([1.5, 0.0, 0.5]))
    assert float(bumped[0] - a[0, 0]) == pytest.approx(0.5)
    assert float(bumped[1] - a[1, 0]) == pytest.approx(-0.25)
    with pytest.raises(ValueError, match="at least 2 prompts"):
        planner_advantages(torch.tensor([[1.0]]), m1_baseline="loo")
    with pytest.raises(ValueError, match="m1_baseline"):
        planner_advantages(r_plan, m1_baseline="mean")


def _rollouts(p: int, m: int, k: int, seed: int = 0, branches: bool = True) -> list[PromptRollouts]:
    rng = random.Random(seed)
    prompts = []
    for i in range(p):
        tuples = []
        for _ in range(m):
            sb = tuple(
                SolverBranch(
                    prompt=(1, 10 + i, 20 + b),
                    program=tuple(rng.randrange(30, 40) for _ in range(rng.randint(1, 4))),
                    reward=float(rng.random() < 0.4),
                )
                for b in range(k)
            )
            tuples.append(
                TupleRollout(
                    planner_prompt=(1, 10 + i),
                    plan=tuple(rng.randrange(40, 50) for _ in range(rng.randint(2, 5))),
                    gate=float(rng.random() < 0.7),
                    branches=sb if branches else (),
                )
            )
        prompts.append(PromptRollouts(tuple(tuples)))
    return prompts


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_rows_carry_the_right_advantage_per_region(m: int) -> None:
    prompts = _rollouts(3, m, 4, seed=m)
    rows, stats = build_cppo_rows(prompts)
    assert len(rows) == 3 * m * (1 + 4)
    tuples = [t for p in prompts for t in p.tuples]
    branch = torch.tensor([[b.reward for b in t.branches] for t in tuples])
    gate = torch.tensor([t.gate for t in tuples])
    r_plan = (gate * branch.max(-1).values).view(3, m)
    a_plan = planner_advantages(r_plan).reshape(-1)
    a_solve = solver_advantages(branch)
    planner_rows = [r for r in rows if r.segments[1].region == Region.PLANNER]
    solver_rows = [r for r in rows if r.segments[1].region == Region.SOLVER]
    assert [r.segments[1].advantage for r in planner_rows] == pytest.approx(a_plan.tolist())
    assert [r.segments[1].advantage for r in solver_rows] == pytest.approx(
        a_solve.reshape(-1).tolist()
    )
    assert stats.r_plan_mean == pytest.approx(float(r_plan.mean()))
    batch = collate(rows, pad_id=0)
    batch.validate()
    # each trained token holds exactly its own row's advantage; prompts and padding hold zero
    for b, row in enumerate(rows):
        n_prompt = len(row.segments[0].ids)
        n_comp = len(row.segments[1].ids)
        assert (batch.region[b, :n_prompt] == Region.NONE).all()
        assert (batch.region[b, n_prompt : n_prompt + n_comp] == row.segments[1].region).all()
        assert (batch.advantages[b, n_prompt + n_comp :] == 0).all()
        assert torch.allclose(
            batch.advantages[b, n_prompt : n_prompt + n_comp],
            torch.tensor(row.segments[1].advantage),
        )


def test_gate_switch_changes_only_planner_credit() -> None:
    prompts = _rollouts(2, 4, 4, seed=3)
    gated, _ = build_cppo_rows(prompts)
    ungated, _ = build_cppo_rows(prompts, CPPOConfig(plan_reward=PlanReward.NO_GATE))
    solver = [r.segments[1].advantage for r in gated if r.segments[1].region == Region.SOLVER]
    solver_u = [r.segments[1].advantage for r in ungated if r.segments[1].region == Region.SOLVER]
    assert solver == solver_u
    plan = [r.segments[1].advantage for r in gated if r.segments[1].region == Region.PLANNER]
    plan_u = [r.segments[1].advantage for r in ungated if r.segments[1].region == Region.PLANNER]
    assert plan != plan_u


def test_warmup_stage_needs_no_solver_branches() -> None:
    prompts = _rollouts(2, 4, 4, seed=5, branches=False)
    rows, stats = build_cppo_rows(prompts, CPPOConfig(plan_reward=PlanReward.WARMUP))
    assert len(rows) == 8 and all(r.segments[1].region == Region.PLANNER for r in rows)
    gate = torch.tensor([t.gate for p in prompts for t in p.tuples]).view(2, 4)
    assert [r.segments[1].advantage for r in rows] == pytest.approx(
        planner_advantages(gate).reshape(-1).tolist()
    )
    with pytest.raises(ValueError, match="no solver branches"):
        build_cppo_rows(prompts)


def test_assembly_rejects_ragged_rollouts() -> None:
    prompts = _rollouts(2, 2, 4)
    ragged = [prompts[0], PromptRollouts(prompts[1].tuples[:1])]
    with pytest.raises(ValueError, match="same number M"):
        build_cppo_rows(ragged)
    t = prompts[0].tuples[0]
    short = TupleRollout(t.planner_prompt, t.plan, t.gate, t.branches[:3])
    with pytest.raises(ValueError, match="same number K"):
        build_cppo_rows([PromptRollouts((short, prompts[0].tuples[1]))])
    bad_gate = TupleRollout(t.planner_prompt, t.plan, 1.5, t.branches)
    with pytest.raises(ValueError, match="gate values"):
        build_cppo_rows([PromptRollouts((bad_gate, prompts[0].tuples[1]))])


def test_collate_refuses_a_trained_first_token() -> None:
    with pytest.raises(ValueError, match="cannot start the row"):
        collate([Row((Segment((1, 2), Region.SOLVER, 1.0),))], pad_id=0)
