"""GRPO building blocks (Shao et al. 2024, DeepSeekMath), the study's optimiser, unchanged.

Pure tensor functions: group-normalised advantages, the PPO clipped surrogate with a per-token
importance ratio, the k3 KL estimator to a frozen reference, and the three loss aggregations.
Plus the two model-precision helpers the study prescribes:

* trainable weights stay fp32. At lr 5e-7 an AdamW step moves a weight by about 5e-7 (Adam's
  update is ~lr per step), while bf16 keeps 8 significant bits: a weight of 0.02 has a bf16
  spacing of 2^-13 ~ 1.2e-4, over two hundred times the step, so w + step rounds back to w and
  training silently does nothing. ``check_trainable_fp32`` refuses such a model.
* the frozen reference only serves log-probs, so half precision halves its memory at no cost to
  the update (``make_reference``).
"""

from __future__ import annotations

import copy
from typing import Literal, cast

import torch
from torch import Tensor, nn

from trainers.harness import quote

StdKind = Literal["bessel", "population"]
Aggregation = Literal["sequence-mean", "token-mean", "constant", "grpo", "dapo", "dr_grpo"]
# TRL's GRPOTrainer ``loss_type`` names for the same aggregations (tests/trainers/test_trainers_trl_oracle.py
# checks loss and gradient against TRL for each pair). TRL's "bnpo" is a token mean over one
# micro-batch; ours is over the global batch, which is what TRL's "dapo" does.
TRL_NAMES: dict[str, str] = {"grpo": "sequence-mean", "dapo": "token-mean", "dr_grpo": "constant"}
AGGREGATIONS = ("sequence-mean", "token-mean", "constant", *TRL_NAMES)
# The study's loss (Eq. cppo-loss) is a sum of per-sequence GRPO objectives: each sequence's
# token mean, then the mean over sequences, TRL's "grpo".
DEFAULT_AGGREGATION: Aggregation = "sequence-mean"

CLIP_EPS = 0.2
KL_BETA = 0.01
ADV_EPS = 1e-6
# Bessel (n-1) by default: it is what torch.std, TRL's GRPOTrainer and verl use, so advantages
# match the common GRPO implementations the study compares against.
DEFAULT_STD: StdKind = "bessel"


def group_normalised_advantages(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    std: StdKind = DEFAULT_STD,
    eps: float = ADV_EPS,
    scale: bool = True,
) -> Tensor:
    # GRPO Eq. group-adv: A_i = (r_i - mean_g r) / (std_g r + eps), over rewards sharing a group id
    # scale=False: A_i = r_i - mean_g r, Dr. GRPO's (Liu et al. 2025) and TRL's scale_rewards="none"
    if rewards.dim() != 1 or rewards.shape != group_ids.shape:
        raise ValueError("rewards and group_ids must be 1-D tensors of the same length")
    if std not in ("bessel", "population"):
        raise ValueError(f"std must be 'bessel' or 'population', got {quote(std)}")
    r = rewards.to(torch.float64)
    _, inv = torch.unique(group_ids, return_inverse=True)
    g = int(inv.max()) + 1 if inv.numel() else 0
    count = torch.zeros(g, dtype=torch.float64).index_add_(0, inv, torch.ones_like(r))
    mean = torch.zeros(g, dtype=torch.float64).index_add_(0, inv, r) / count
    dev = r - mean[inv]
    sq = torch.zeros(g, dtype=torch.float64).index_add_(0, inv, dev * dev)
    dof = count - 1 if std == "bessel" else count
    sd = torch.sqrt(sq / dof.clamp(min=1))
    adv = dev / (sd[inv] + eps) if scale else dev
    # A group without contrast (constant rewards, or a single member) carries no signal: exact 0,
    # not round-off of the mean divided by eps.
    hi = torch.full((g,), -torch.inf, dtype=torch.float64).scatter_reduce(0, inv, r, "amax")
    lo = torch.full((g,), torch.inf, dtype=torch.float64).scatter_reduce(0, inv, r, "amin")
    flat = (hi == lo)[inv]
    adv = torch.where(flat, torch.zeros_like(adv), adv)
    return adv.to(rewards.dtype if rewards.is_floating_point() else torch.float32)


def clipped_surrogate(
    logp: Tensor, old_logp: Tensor, adv: Tensor, clip_eps: float = CLIP_EPS
) -> tuple[Tensor, Tensor]:
    # GRPO Eq. clipped-surrogate: -min(rho A, clip(rho, 1-eps, 1+eps) A), rho = exp(logp - old)
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    loss = -torch.minimum(unclipped, clipped)
    # Tokens whose gradient the clip switched off (the objective no longer rewards moving further).
    was_clipped = ((ratio > 1.0 + clip_eps) & (adv > 0)) | ((ratio < 1.0 - clip_eps) & (adv < 0))
    return loss, was_clipped


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    # Schulman k3 Eq. KL-k3: exp(ref - logp) - (ref - logp) - 1 >= 0, unbiased for KL(pi || ref)
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


def canonical_aggregation(mode: str) -> Aggregation:
    """Our name for an aggregation given by our name or by TRL's (``TRL_NAMES``)."""
    if mode not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {quote(mode)}: one of {', '.join(AGGREGATIONS)}")
    return cast(Aggregation, TRL_NAMES.get(mode, mode))


def aggregate(
    per_token: Tensor,
    mask: Tensor,
    mode: Aggregation = DEFAULT_AGGREGATION,
    max_tokens: int | None = None,
    denominator: float | None = None,
) -> Tensor:
    # GRPO / DAPO / Dr.GRPO Eq. aggregation: how per-token losses of a (B, T) batch become a scalar
    """``denominator`` replaces this batch's own count (``aggregation_count``) by the count of
    the whole global batch, so micro-batches and processes each contribute their exact share
    of the global loss (summing their gradients then gives the single-batch gradient)."""
    mode = canonical_aggregation(mode)
    m = mask.to(per_token.dtype)
    total = (per_token * m).sum()
    count = denominator if denominator is not None else aggregation_count(mask, mode)
    count = max(float(count), 1.0)
    if mode == "token-mean":  # DAPO Eq. token-mean: sum over all tokens / number of tokens
        return total / count
    if mode == "sequence-mean":  # GRPO Eq. seq-mean: mean over each row, then over rows
        per_row = (per_token * m).sum(-1) / m.sum(-1).clamp(min=1.0)
        return per_row.sum() / count
    # Dr.GRPO Eq. const-norm: sum / (rows * max_tokens), length-unbiased
    if max_tokens is None or max_tokens < 1:
        raise ValueError("aggregation 'constant' (Dr.GRPO) needs max_tokens >= 1")
    return total / (count * max_tokens)


def aggregation_count(mask: Tensor, mode: Aggregation = DEFAULT_AGGREGATION) -> float:
    """What ``aggregate`` divides by: trained tokens (token-mean), rows with a trained token
    (sequence-mean) or all rows (constant). Sum it over micro-batches and processes to get the
    global denominator."""
    mode = canonical_aggregation(mode)
    if mode == "token-mean":
        return float(mask.sum())
    if mode == "sequence-mean":
        return float((mask.sum(-1) > 0).sum())
    return float(mask.shape[0])


def make_reference(model: nn.Module, dtype: torch.dtype = torch.bfloat16) -> nn.Module:
    """Frozen half-precision copy of ``model`` for the KL term: eval mode, no gradients."""
    if dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"reference dtype must be bf16, fp16 or fp32, got {dtype}")
    ref = copy.deepcopy(model).to(dtype)
    ref.eval()
    ref.requires_grad_(False)
    return ref


def check_trainable_fp32(model: nn.Module) -> None:
    """Raise if a trainable parameter is not fp32 (a bf16 AdamW step at lr 5e-7 underflows)."""
    for name, p in model.named_parameters():
        if p.requires_grad and p.dtype != torch.float32:
            raise ValueError(
                f"trainable parameter {name} is {p.dtype}; keep trainable weights in float32 "
                "(small AdamW steps round away in half precision)"
            )
