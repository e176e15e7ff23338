"""Stages 3 and 5, one step: rollouts -> rewards -> split-region rows -> one policy update.

Warm-up (stage 3) is the planner-only special case: R_warm = J, no solver branches, solver
frozen. Joint CPPO (stage 5): M tuples per prompt, K solver branches each, R_plan under the
ablation row, within-tuple solver and across-tuple planner advantages, one ``policy_loss`` call
over the mixed batch (collate keeps each region's advantage on its own tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from trainers.core.batch import PolicyBatch, Region, Row, collate
from trainers.core.cppo import (
    CPPOConfig,
    PlanReward,
    PromptRollouts,
    ReduceSum,
    build_cppo_rows,
)
from trainers.core.cppo_ablation import Ablation, reward_diagnostics, tuple_rewards
from trainers.core.loss import LossConfig, frozen_logprobs, policy_loss
from trainers.harness import quote


@dataclass(frozen=True)
class StepRows:
    rows: list[Row]
    metrics: dict[str, float]


def _tensors(prompts: Sequence[PromptRollouts]) -> tuple[Tensor, Tensor | None]:
    tuples = [t for p in prompts for t in p.tuples]
    gate = torch.tensor([t.gate for t in tuples], dtype=torch.float32)
    if not tuples[0].branches:
        return gate, None
    return gate, torch.tensor([[b.reward for b in t.branches] for t in tuples])


def joint_rows(
    prompts: Sequence[PromptRollouts], row: Ablation, reduce_sum: ReduceSum | None = None
) -> StepRows:
    """Stage 5 rows and reward diagnostics under the ablation ``row``. ``reduce_sum``: the
    engine's all-reduce (M = 1 with the global leave-one-out baseline needs it)."""
    if any(len(p.tuples) != row.m for p in prompts):
        raise ValueError(f"ablation {quote(row.name)} expects M = {row.m} tuples per prompt")
    rows, stats = build_cppo_rows(prompts, row.core_config(), reduce_sum=reduce_sum)
    gate, branch = _tensors(prompts)
    if branch is None:
        raise ValueError("joint CPPO needs solver branches (K rewards per tuple)")
    metrics = reward_diagnostics(tuple_rewards(gate, branch, row))
    metrics.update(
        solver_pass_rate=float((branch > 0).float().mean()),
        planner_adv_nonzero=stats.planner_adv_nonzero,
        solver_adv_nonzero=stats.solver_adv_nonzero,
    )
    return StepRows(rows, metrics)


def warmup_rows(prompts: Sequence[PromptRollouts]) -> StepRows:
    """Stage 3 rows: planner tokens only, R_warm = J (study Eq. warmup-reward)."""
    cfg = CPPOConfig(plan_reward=PlanReward.WARMUP, train_solver=False)
    rows, stats = build_cppo_rows(prompts, cfg)
    gate, _ = _tensors(prompts)
    return StepRows(
        rows,
        {
            "j_accept": float((gate > 0).float().mean()),
            "planner_adv_nonzero": stats.planner_adv_nonzero,
        },
    )


def region_adv_nonzero(batch: PolicyBatch) -> dict[str, float]:
    out = {}
    for r in (Region.PLANNER, Region.SOLVER):
        sel = (batch.region == r) & batch.attention_mask.bool()
        n = int(sel.sum())
        out[f"adv_nonzero/{r.name.lower()}"] = (
            float(((batch.advantages != 0) & sel).sum()) / n if n else 0.0
        )
    return out


def update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    rows: Sequence[Row],
    pad_id: int,
    *,
    loss_config: LossConfig | None = None,
    reference: nn.Module | None = None,
    max_grad_norm: float = 1.0,
) -> dict[str, float]:
    """One optimizer step on ``rows``; returns loss diagnostics, grad and parameter-step norms
    and the per-region advantage non-zero rates."""
    cfg = loss_config or LossConfig(beta=0.0 if reference is None else LossConfig().beta)
    batch = collate(rows, pad_id)
    device = next(model.parameters()).device
    batch = batch.replace(
        **{
            k: getattr(batch, k).to(device)
            for k in ("input_ids", "attention_mask", "region", "advantages")
        }
    )
    if reference is not None and cfg.uses_reference:
        ref = frozen_logprobs(reference, batch, cfg.temperature, cfg.logits_chunk_tokens)
        batch = batch.replace(ref_logprobs=ref)
    model.train()
    loss, diag = policy_loss(model, batch, cfg)
    optimizer.zero_grad()
    loss.backward()
    grad = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.step()
    squares = [
        ((p.detach() - b) ** 2).sum() for p, b in zip(model.parameters(), before, strict=True)
    ]
    step = torch.sqrt(sum(squares[1:], squares[0]))
    model.eval()
    return {
        **diag.as_dict(),
        "grad_norm": grad,
        "param_step_norm": float(step),
        **region_adv_nonzero(batch),
    }


@dataclass(frozen=True)
class PlateauRule:
    """Warm-up stops when J acceptance has not risen by more than ``min_gain`` over the best of
    the earlier steps for ``patience`` consecutive steps, or at ``max_steps``, or once it
    reaches ``target`` (nothing left to learn from R_warm)."""

    patience: int = 3
    min_gain: float = 0.02
    max_steps: int = 50
    target: float = 0.98

    def stop(self, curve: Sequence[float]) -> str | None:
        if not curve:
            return None
        if len(curve) >= self.max_steps:
            return f"max_steps {self.max_steps}"
        if curve[-1] >= self.target:
            return f"acceptance {curve[-1]:.3f} >= target {self.target}"
        if len(curve) > self.patience:
            best_before = max(curve[: -self.patience])
            if max(curve[-self.patience :]) <= best_before + self.min_gain:
                return f"plateau: no gain > {self.min_gain} over {self.patience} steps"
        return None
