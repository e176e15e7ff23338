"""CPPO rewards over arrays, with the study's ablation switches as named rows.

R_out = max_i r_i over a tuple's K branches, J = gate verdict, R_plan = J * R_out (CPPO),
R_warm = J (warm-up). Ablation rows of the study's tables change exactly one thing:
``no_gate`` (R_plan = R_out), ``gate_only`` (R_plan = J), ``m1``/``m2``/``m4``/``m8`` (tuples per
prompt; M = 1 is the study's single-sample REINFORCE, A = R_plan), ``m1_loo`` (M = 1 with a
leave-one-out baseline over the global batch's prompts: an option, not the study's),
``frozen_solver`` and ``no_warmup`` (stage 3 skipped).

``frozen_solver`` drops the solver rows from the loss: no gradient ever comes from a solver
token. It does NOT freeze the solver's behaviour: planner and solver share one backbone, so
every planner update also moves the weights the solver samples from (and the KL to the
reference still acts on planner tokens only). What the ablation holds fixed is the solver's
own learning signal (its within-tuple advantages), not its parameters; a truly frozen solver
would need a second, untrained copy of the model to write the programs.
The arithmetic lives in trainers.core.cppo; this module only selects it and adds diagnostics.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor

from trainers.core.cppo import CPPOConfig, PlanReward, outcome_reward, plan_reward
from trainers.harness import Registry

STUDY_K = 4  # strategies per tuple = solver branches (the pass@K budget)
DEFAULT_M = 8  # planner tuples per prompt


def step_rollouts(m: int, k: int, joint: bool) -> int:
    """A CPPO step's rollouts per prompt: M planner tuples, and in the joint stage K solver
    branches for each (what the engine's max_rollouts_per_step bounds)."""
    return m * (1 + k) if joint else m


@dataclass(frozen=True)
class Ablation:
    name: str = "cppo"
    plan_reward: PlanReward = PlanReward.GATED
    m: int | None = None  # None: the run's M setting; the M-sweep rows fix it
    train_solver: bool = True
    warmup: bool = True
    m1_baseline: str = "none"  # M = 1: "none" (study: A = R_plan) | "loo" (global batch)

    def core_config(self) -> CPPOConfig:
        return CPPOConfig(
            plan_reward=self.plan_reward,
            train_solver=self.train_solver,
            m1_baseline=self.m1_baseline,
        )


ABLATIONS: Registry[Ablation] = Registry("ablation")
for _ab in (
    Ablation(),
    Ablation("no_gate", plan_reward=PlanReward.NO_GATE),
    Ablation("gate_only", plan_reward=PlanReward.GATE_ONLY),
    Ablation("frozen_solver", train_solver=False),
    Ablation("no_warmup", warmup=False),
    *(Ablation(f"m{m}", m=m) for m in (1, 2, 4, 8)),
    Ablation("m1_loo", m=1, m1_baseline="loo"),
):
    ABLATIONS.register(_ab.name)(_ab)


def ablation(name: str, m: int | None = None) -> Ablation:
    """The named row with M resolved: an M-sweep row keeps its own M, any other row takes
    ``m`` (the run's setting), else the study's M = 8."""
    row = ABLATIONS.get(name)
    if row.m is not None:
        return row
    return dataclasses.replace(row, m=int(m) if m is not None else DEFAULT_M)


@dataclass(frozen=True)
class TupleRewards:
    j: Tensor  # (N,) gate verdicts
    r_out: Tensor  # (N,) pass@K of each tuple
    r_plan: Tensor  # (N,) the planner's reward under the ablation


def tuple_rewards(gate: Tensor, branch_rewards: Tensor, row: Ablation) -> TupleRewards:
    # study Eq. R-out / R-plan under the ablation row: (N,), (N, K) -> per-tuple rewards
    r_out = outcome_reward(branch_rewards.to(torch.float32))
    return TupleRewards(gate.float(), r_out, plan_reward(gate.float(), r_out, row.plan_reward))


def joint_counts(j: Tensor, r_out: Tensor) -> dict[str, int]:
    """The validity x outcome 2x2 table (for the report's heat map)."""
    v, o = j > 0, r_out > 0
    return {
        "valid_pass": int((v & o).sum()),
        "valid_fail": int((v & ~o).sum()),
        "invalid_pass": int((~v & o).sum()),
        "invalid_fail": int((~v & ~o).sum()),
    }


def reward_diagnostics(rewards: TupleRewards) -> dict[str, float]:
    """Per-step means the study tracks: R_out, J acceptance, R_plan and reward sparsity."""
    return {
        "r_out": float(rewards.r_out.mean()),
        "j_accept": float((rewards.j > 0).float().mean()),
        "r_plan": float(rewards.r_plan.mean()),
        "r_plan_sparsity": float((rewards.r_plan == 0).float().mean()),
        **{f"joint/{k}": float(v) for k, v in joint_counts(rewards.j, rewards.r_out).items()},
    }
