"""Pure, typed algorithm core shared by every trainer of the study.

Reward transforms and advantages (GRPO, CPPO, PKPO, pass@k-RL, UpSkill MI), the plan-validity
gate, token batches with region masks, and the single ``policy_loss``. Each function names the
equation it implements in a one-line comment; the pipelines (rollouts, stages) build on these.
"""

from trainers.core.batch import PolicyBatch, Region, Row, Segment, collate
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
    solver_advantages,
    warmup_reward,
)
from trainers.core.grpo import (
    check_trainable_fp32,
    clipped_surrogate,
    group_normalised_advantages,
    kl_k3,
    make_reference,
)
from trainers.core.loss import LossConfig, LossDiagnostics, frozen_logprobs, policy_loss
from trainers.core.passk_rl import passk_advantages
from trainers.core.pkpo import (
    maxg_at_k,
    pass_at_k_rho,
    pkpo_s,
    pkpo_sloo,
    pkpo_sloo_minus_one,
    pkpo_transform,
)
from trainers.core.upskill import enumerate_skills, mi_reward, sample_skills, upskill_reward

__all__ = [
    "CPPOConfig",
    "LossConfig",
    "LossDiagnostics",
    "PlanReward",
    "PolicyBatch",
    "PromptRollouts",
    "Region",
    "Row",
    "Segment",
    "SolverBranch",
    "TupleRollout",
    "build_cppo_rows",
    "check_trainable_fp32",
    "clipped_surrogate",
    "collate",
    "frozen_logprobs",
    "group_normalised_advantages",
    "kl_k3",
    "make_reference",
    "enumerate_skills",
    "maxg_at_k",
    "mi_reward",
    "outcome_reward",
    "pass_at_k_rho",
    "passk_advantages",
    "pkpo_s",
    "pkpo_sloo",
    "pkpo_sloo_minus_one",
    "pkpo_transform",
    "plan_reward",
    "planner_advantages",
    "policy_loss",
    "sample_skills",
    "solver_advantages",
    "upskill_reward",
    "warmup_reward",
]
