"""CPPO credit assignment: split planner / solver advantages and one mixed batch.

For a prompt x the planner samples M tuples S (K strategies each); the shared solver writes one
program y_i per strategy and the verifier scores r_i = V(x, y_i) in [0, 1].

* solver: a_i = within-tuple normalisation of the K branch rewards (study Eq. solver-adv);
* planner: R_out = max_i r_i (pass@K of the tuple), R_plan = J(x, S) * R_out, and the planner
  advantage normalises R_plan across the M tuples of the prompt (study Eq. planner-adv);
* warm-up stage: R_warm = J(x, S) (study Eq. warmup-reward), no solver execution needed.

Ablations: ``PlanReward.NO_GATE`` (R_plan = R_out), ``PlanReward.GATE_ONLY`` (R_plan = J) and any
M >= 1. With M = 1 there is nothing to normalise against inside a prompt, and the study replaces
Eq. planner-adv by a single-sample REINFORCE update: A = R_plan, no baseline, no normalisation
(``m1_baseline="none"``, the default). ``m1_baseline="loo"`` keeps a leave-one-out baseline, the
mean R_plan of the *other* prompts of the GLOBAL batch (every process's prompts: the sums are
all-reduced, so the advantage does not depend on how many processes share the step): unbiased,
stateless (a resumed run reproduces it) and, unlike A = R_plan >= 0, it also pushes down plans
that do worse than typical. It is not the study's update; it is an option.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

import torch
from torch import Tensor

from trainers.core.batch import Region, Row
from trainers.core.grpo import ADV_EPS, DEFAULT_STD, StdKind, group_normalised_advantages
from trainers.harness import quote


class PlanReward(str, Enum):
    GATED = "gated"  # R_plan = J * R_out (CPPO)
    NO_GATE = "no_gate"  # R_plan = R_out
    GATE_ONLY = "gate_only"  # R_plan = J
    WARMUP = "warmup"  # R_warm = J, the warm-up stage (branches need not be run)


@dataclass(frozen=True)
class SolverBranch:
    prompt: tuple[int, ...]  # solver prompt: problem + one strategy of the tuple
    program: tuple[int, ...]  # the solver's completion
    reward: float  # r_i = V(x, y_i)


@dataclass(frozen=True)
class TupleRollout:
    planner_prompt: tuple[int, ...]
    plan: tuple[int, ...]  # planner completion: the tuple S of K strategies
    gate: float  # J(x, S) in [0, 1] (the hard gate gives 0 or 1)
    branches: tuple[SolverBranch, ...] = ()


@dataclass(frozen=True)
class PromptRollouts:
    tuples: tuple[TupleRollout, ...]  # the M tuples sampled for one prompt


M1_BASELINES = ("none", "loo")
# sums a tensor over every process (the engine's all-reduce); the identity in one process
ReduceSum = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class CPPOConfig:
    plan_reward: PlanReward = PlanReward.GATED
    std: StdKind = DEFAULT_STD
    eps: float = ADV_EPS
    train_planner: bool = True
    train_solver: bool = True
    m1_baseline: str = "none"  # M = 1 only: "none" (study: A = R_plan) | "loo" (global batch)

    def __post_init__(self) -> None:
        if self.m1_baseline not in M1_BASELINES:
            raise ValueError(f"m1_baseline: {quote(self.m1_baseline)} is not one of {M1_BASELINES}")


@dataclass(frozen=True)
class CPPOStats:
    r_out_mean: float
    r_plan_mean: float
    gate_rate: float
    planner_adv_nonzero: float
    solver_adv_nonzero: float


def solver_advantages(
    branch_rewards: Tensor, *, std: StdKind = DEFAULT_STD, eps: float = ADV_EPS
) -> Tensor:
    # study Eq. solver-adv: a_{i} = (r_i - mean_K r) / (std_K r + eps) within each tuple, (N, K)
    n, k = branch_rewards.shape
    ids = torch.arange(n).repeat_interleave(k)
    return group_normalised_advantages(branch_rewards.reshape(-1), ids, std=std, eps=eps).view(n, k)


def outcome_reward(branch_rewards: Tensor) -> Tensor:
    # study Eq. R-out: R_out = max_i r_i over the K branches of a tuple, (N, K) -> (N,)
    return branch_rewards.max(dim=-1).values


def plan_reward(gate: Tensor, r_out: Tensor | None, mode: PlanReward = PlanReward.GATED) -> Tensor:
    # study Eq. R-plan: R_plan = J(x, S) * R_out, with the ablation switches and R_warm = J
    if mode in (PlanReward.GATE_ONLY, PlanReward.WARMUP):
        return gate.to(torch.float32)
    if r_out is None:
        raise ValueError(f"plan reward {quote(mode.value)} needs R_out (run the solver branches)")
    if mode == PlanReward.NO_GATE:
        return r_out.to(torch.float32)
    return (gate * r_out).to(torch.float32)


def warmup_reward(gate: Tensor) -> Tensor:
    # study Eq. warmup-reward: R_warm = J(x, S)
    return plan_reward(gate, None, PlanReward.WARMUP)


def planner_advantages(
    r_plan: Tensor,
    *,
    std: StdKind = DEFAULT_STD,
    eps: float = ADV_EPS,
    m1_baseline: str = "none",
    reduce_sum: ReduceSum | None = None,
) -> Tensor:
    # study Eq. planner-adv: normalise R_plan across the M tuples of each prompt, (P, M) -> (P, M)
    """M = 1: the study's single-sample REINFORCE, A = R_plan (``m1_baseline="none"``), or the
    leave-one-out baseline over the global batch (``"loo"``; ``reduce_sum`` sums over the
    processes, and every process must then call this, as the engine's step does)."""
    p, m = r_plan.shape
    if m > 1:
        ids = torch.arange(p).repeat_interleave(m)
        return group_normalised_advantages(r_plan.reshape(-1), ids, std=std, eps=eps).view(p, m)
    if m1_baseline == "none":  # study: "a single-sample REINFORCE update", A = R_plan
        return r_plan.to(torch.float32).clone()
    if m1_baseline == "loo":
        return reinforce_loo_advantages(r_plan.reshape(-1), reduce_sum).view(p, 1)
    raise ValueError(f"m1_baseline: {quote(m1_baseline)} is not one of {M1_BASELINES}")


def reinforce_loo_advantages(rewards: Tensor, reduce_sum: ReduceSum | None = None) -> Tensor:
    # REINFORCE Eq. loo-baseline (M = 1): A_p = R_p - mean_{q != p} R_q over the GLOBAL batch
    r = rewards.to(torch.float64)
    totals = torch.tensor([float(r.sum()), float(r.numel())], dtype=torch.float64)
    if reduce_sum is not None:  # every process's prompts: the sum and count over all of them
        totals = reduce_sum(totals).to(torch.float64).cpu()
    total, n = float(totals[0]), int(round(float(totals[1])))
    if n < 2:
        raise ValueError(
            "M = 1 with m1_baseline 'loo' needs at least 2 prompts per step for the "
            "leave-one-out baseline"
        )
    baseline = (total - r) / (n - 1)
    return (r - baseline).to(torch.float32)


def _reward_tensors(prompts: Sequence[PromptRollouts]) -> tuple[Tensor, Tensor | None, int]:
    if not prompts:
        raise ValueError("no prompts to assemble")
    m = len(prompts[0].tuples)
    if m == 0 or any(len(p.tuples) != m for p in prompts):
        raise ValueError("every prompt needs the same number M >= 1 of tuples")
    tuples = [t for p in prompts for t in p.tuples]
    gate = torch.tensor([t.gate for t in tuples], dtype=torch.float32)
    if bool(((gate < 0) | (gate > 1)).any()):
        raise ValueError("gate values J(x, S) must lie in [0, 1]")
    ks = {len(t.branches) for t in tuples}
    if ks == {0}:
        return gate, None, m
    if len(ks) != 1:
        raise ValueError(f"every tuple needs the same number K of solver branches, got {ks}")
    rewards = torch.tensor([[b.reward for b in t.branches] for t in tuples], dtype=torch.float32)
    return gate, rewards, m


def build_cppo_rows(
    prompts: Sequence[PromptRollouts],
    config: CPPOConfig | None = None,
    *,
    reduce_sum: ReduceSum | None = None,
) -> tuple[list[Row], CPPOStats]:
    """Planner rows (prompt + tuple) and solver rows (solver prompt + program) with their
    advantages; ``collate`` turns them into one batch for one ``policy_loss`` call.
    ``reduce_sum``: the all-reduce for M = 1's global leave-one-out baseline (option "loo")."""
    cfg = config or CPPOConfig()
    gate, branch_r, m = _reward_tensors(prompts)
    if branch_r is None and (cfg.train_solver and cfg.plan_reward != PlanReward.WARMUP):
        raise ValueError("tuples have no solver branches; only the warm-up stage runs without")
    r_out = outcome_reward(branch_r) if branch_r is not None else None
    r_plan = plan_reward(gate, r_out, cfg.plan_reward).view(len(prompts), m)
    a_plan = planner_advantages(
        r_plan, std=cfg.std, eps=cfg.eps, m1_baseline=cfg.m1_baseline, reduce_sum=reduce_sum
    ).reshape(-1)
    a_solve = (
        solver_advantages(branch_r, std=cfg.std, eps=cfg.eps) if branch_r is not None else None
    )
    tuples = [t for p in prompts for t in p.tuples]
    rows: list[Row] = []
    for j, tup in enumerate(tuples):
        if cfg.train_planner:
            rows.append(
                Row.prompt_completion(tup.planner_prompt, tup.plan, Region.PLANNER, a_plan[j])
            )
        if cfg.train_solver and a_solve is not None:
            for i, br in enumerate(tup.branches):
                rows.append(
                    Row.prompt_completion(br.prompt, br.program, Region.SOLVER, a_solve[j, i])
                )
    stats = CPPOStats(
        r_out_mean=float(r_out.mean()) if r_out is not None else float("nan"),
        r_plan_mean=float(r_plan.mean()),
        gate_rate=float((gate > 0).float().mean()),
        planner_adv_nonzero=float((a_plan != 0).float().mean()),
        solver_adv_nonzero=float((a_solve != 0).float().mean()) if a_solve is not None else 0.0,
    )
    return rows, stats
