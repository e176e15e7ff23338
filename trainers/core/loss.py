"""``policy_loss(model, batch)``: the one GRPO-family loss every trainer in the study calls.

Per token: clipped surrogate with the token's advantage plus beta * k3 KL to the reference,
aggregated over the batch's trained tokens (study Eq. cppo-loss when the batch mixes planner and
solver rows: each token only ever sees its own region's advantage, set by ``collate``).
Works with any Hugging Face causal LM: logits come from model(input_ids, attention_mask).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor, nn

from trainers.core.batch import PolicyBatch, Region
from trainers.core.grpo import CLIP_EPS, KL_BETA, Aggregation, aggregate, clipped_surrogate, kl_k3


@dataclass(frozen=True)
class LossConfig:
    clip_eps: float = CLIP_EPS
    beta: float = KL_BETA
    aggregation: Aggregation = "token-mean"
    max_tokens: int | None = None  # Dr.GRPO's constant normaliser, required for "constant"


@dataclass(frozen=True)
class LossDiagnostics:
    loss: float
    policy_loss: float
    kl: float  # mean k3 KL over trained tokens
    clip_fraction: float  # share of trained tokens whose gradient the clip switched off
    ratio_mean: float
    adv_nonzero_rate: float  # share of trained tokens with a non-zero advantage
    # mean -log pi(y_t) over trained tokens: a Monte-Carlo estimate of the policy's entropy
    # on its own samples that needs no (B, T, V) entropy pass
    entropy: float = 0.0
    tokens: dict[str, int] = field(default_factory=dict)  # trained tokens per region

    def as_dict(self) -> dict[str, float]:
        d = asdict(self)
        flat = {k: float(v) for k, v in d.items() if k != "tokens"}
        flat.update({f"tokens/{k}": float(v) for k, v in self.tokens.items()})
        return flat


def _logits(model: nn.Module, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    out = model(input_ids=input_ids, attention_mask=attention_mask)
    return out.logits if hasattr(out, "logits") else out


def logprobs_from_logits(logits: Tensor, input_ids: Tensor) -> Tensor:
    # Eq. token-logp: log pi(y_t | y_<t) = logit[t-1, y_t] - logsumexp(logit[t-1]); entry 0 is 0
    # Row by row: the fp32 upcast of a half-precision reference's (T, V) logits then exists for
    # one row at a time instead of the whole (B, T, V) batch (gigabytes at 150k-token vocabs).
    rows = []
    for lg_row, ids_row in zip(logits[:, :-1], input_ids[:, 1:], strict=True):
        lg = lg_row.float()
        picked = lg.gather(-1, ids_row.unsqueeze(-1)).squeeze(-1)
        rows.append(picked - torch.logsumexp(lg, dim=-1))
    lp = torch.stack(rows)
    return torch.cat([lp.new_zeros(lp.shape[0], 1), lp], dim=1)


def token_logprobs(model: nn.Module, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    """(B, T) log-probs aligned with input_ids (entry [b, t] scores token t); differentiable."""
    return logprobs_from_logits(_logits(model, input_ids, attention_mask), input_ids)


@torch.no_grad()
def frozen_logprobs(model: nn.Module, batch: PolicyBatch) -> Tensor:
    """Log-probs under a model without building a graph: the old policy or the reference."""
    return token_logprobs(model, batch.input_ids, batch.attention_mask).float()


def policy_loss(
    model: nn.Module,
    batch: PolicyBatch,
    config: LossConfig | None = None,
    *,
    denominator: float | None = None,
) -> tuple[Tensor, LossDiagnostics]:
    # study Eq. cppo-loss (GRPO objective): agg_t[-min(rho_t A_t, clip(rho_t) A_t) + beta k3_t]
    """``denominator``: the global batch's ``aggregation_count`` when this batch is one
    micro-batch (or one process's share) of it; None aggregates over this batch alone."""
    cfg = config or LossConfig()
    batch.validate()
    mask = batch.loss_mask
    logp = token_logprobs(model, batch.input_ids, batch.attention_mask)
    # No stored old log-probs = one update per rollout: the ratio is 1 but still carries gradient.
    old = batch.old_logprobs if batch.old_logprobs is not None else logp.detach()
    adv = batch.advantages.to(logp.dtype)
    surrogate, was_clipped = clipped_surrogate(logp, old.to(logp.dtype), adv, cfg.clip_eps)
    per_token = surrogate
    kl = torch.zeros_like(logp)
    if cfg.beta != 0:
        if batch.ref_logprobs is None:
            raise ValueError(
                "beta != 0 but the batch has no ref_logprobs: fill them with "
                "frozen_logprobs(reference, batch) or set LossConfig(beta=0)"
            )
        kl = kl_k3(logp, batch.ref_logprobs.to(logp.dtype))
        per_token = surrogate + cfg.beta * kl
    loss = aggregate(per_token, mask, cfg.aggregation, cfg.max_tokens, denominator)
    return loss, _diagnostics(loss, surrogate, kl, was_clipped, logp, old, adv, batch, cfg)


@torch.no_grad()
def _diagnostics(
    loss: Tensor,
    surrogate: Tensor,
    kl: Tensor,
    was_clipped: Tensor,
    logp: Tensor,
    old: Tensor,
    adv: Tensor,
    batch: PolicyBatch,
    cfg: LossConfig,
) -> LossDiagnostics:
    mask = batch.loss_mask
    m = mask.to(logp.dtype)
    n = m.sum().clamp(min=1.0)
    tokens = {
        r.name.lower(): int(((batch.region == r) & mask).sum()) for r in Region if r != Region.NONE
    }
    return LossDiagnostics(
        loss=float(loss),
        policy_loss=float(aggregate(surrogate, mask, cfg.aggregation, cfg.max_tokens)),
        kl=float((kl * m).sum() / n),
        clip_fraction=float((was_clipped & mask).sum() / n),
        ratio_mean=float((torch.exp(logp - old) * m).sum() / n),
        adv_nonzero_rate=float(((adv != 0) & mask).sum() / n),
        entropy=float((-logp * m).sum() / n),
        tokens=tokens,
    )
