"""``policy_loss(model, batch)``: the one GRPO-family loss every trainer in the study calls.

Per token: clipped surrogate with the token's advantage plus beta * k3 KL to the reference,
aggregated per sequence by default (study Eq. cppo-loss, a sum of per-sequence GRPO objectives,
when the batch mixes planner and solver rows: each token only ever sees its own region's
advantage, set by ``collate``). Works with any Hugging Face causal LM: logits come from
model(input_ids, attention_mask).

Temperature: rollouts sample from softmax(logits / T), so every log-prob the loss uses (the
policy's, the old policy's and the reference's) is taken from logits / T, as TRL's GRPOTrainer
does: the ratio and the KL then compare the distributions that were actually sampled.
``LossConfig.temperature`` is that T; the old and reference log-probs must be computed at the
same T (``frozen_logprobs(model, batch, temperature)``). See docs/training-loss.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor, nn

from trainers.core.batch import PolicyBatch, Region
from trainers.core.chunked_logprobs import chunked_model_logprobs
from trainers.core.grpo import (
    CLIP_EPS,
    DEFAULT_AGGREGATION,
    KL_BETA,
    Aggregation,
    aggregate,
    canonical_aggregation,
    clipped_surrogate,
    kl_k3,
)


@dataclass(frozen=True)
class LossConfig:
    clip_eps: float = CLIP_EPS
    beta: float = KL_BETA
    # the KL weight on SOLVER tokens (CPPO's programs) in place of ``beta``; None = ``beta``.
    # Not in the study (one weight there): docs/learning.md, CPPO, "the solver's anchor"
    solver_beta: float | None = None
    aggregation: Aggregation = DEFAULT_AGGREGATION
    max_tokens: int | None = None  # Dr.GRPO's constant normaliser, required for "constant"
    # the sampling temperature: log-probs come from logits / temperature (must be > 0)
    temperature: float = 1.0
    # TRL's truncated importance-sampling correction for rollouts drawn by another engine
    # (vLLM): each token's loss is multiplied by min(exp(logp_old - logp_sampler), cap),
    # detached. None = off. Needs the batch's ``sampling_logprobs``.
    is_cap: float | None = None
    # > 0: the LM head + log-softmax over at most this many scored positions at a time, each
    # recomputed in the backward (trainers/core/chunked_logprobs.py): same log-probs and
    # gradients, one chunk's logits in memory. 0 = the whole micro-batch's at once. The
    # engine passes TrainConfig.logits_chunk_tokens (the study's default lives there).
    logits_chunk_tokens: int = 0

    def __post_init__(self) -> None:
        canonical_aggregation(self.aggregation)  # an unknown name fails here, not mid-step
        if not self.temperature > 0:
            raise ValueError(
                f"temperature must be > 0, got {self.temperature}: greedy (T = 0) rollouts "
                "give a group no variance and the log-probs would divide by zero"
            )
        if self.is_cap is not None and not self.is_cap > 0:
            raise ValueError(f"is_cap must be > 0 or None, got {self.is_cap}")
        if self.logits_chunk_tokens < 0:
            raise ValueError(f"logits_chunk_tokens must be >= 0, got {self.logits_chunk_tokens}")
        if self.solver_beta is not None and not self.solver_beta >= 0:
            raise ValueError(f"solver_beta must be >= 0 or None, got {self.solver_beta}")

    @property
    def uses_reference(self) -> bool:
        """Whether any token carries a KL term (and so needs the reference's log-probs)."""
        return self.beta != 0 or bool(self.solver_beta)

    def beta_per_token(self, region: Tensor, dtype: torch.dtype) -> Tensor | float:
        """The KL weight of each token: ``solver_beta`` on SOLVER tokens, ``beta`` elsewhere."""
        if self.solver_beta is None:
            return self.beta
        weights = torch.where(region == Region.SOLVER, self.solver_beta, self.beta)
        return weights.to(dtype)


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
    # sum and count of |log pi_sampler(y_t) - log pi_old(y_t)| over trained tokens the rollout
    # engine reported a log-prob for (vLLM: weights one sync behind, other kernels)
    sampler_gap_sum: float = 0.0
    sampler_tokens: int = 0

    def as_dict(self) -> dict[str, float]:
        d = asdict(self)
        skip = ("tokens", "sampler_gap_sum", "sampler_tokens")
        flat = {k: float(v) for k, v in d.items() if k not in skip}
        if self.sampler_tokens:
            flat["sampler_logp_gap"] = self.sampler_gap_sum / self.sampler_tokens
        flat.update({f"tokens/{k}": float(v) for k, v in self.tokens.items()})
        return flat


def _logits(model: nn.Module, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
    out = model(input_ids=input_ids, attention_mask=attention_mask)
    logits: Tensor = out.logits if hasattr(out, "logits") else out  # (a transformers output)
    return logits


def logprobs_from_logits(
    logits: Tensor, input_ids: Tensor, only: Tensor | None = None, temperature: float = 1.0
) -> Tensor:
    # Eq. token-logp: log pi_T(y_t | y_<t) = z[y_t] - logsumexp(z), z = logit[t-1] / T; entry 0 is 0
    # Row by row: the fp32 upcast of a half-precision reference's (T, V) logits then exists for
    # one row at a time instead of the whole (B, T, V) batch (gigabytes at 150k-token vocabs).
    # ``only`` (B, T): score just these tokens (the trained ones), 0 elsewhere. The logsumexp
    # over the vocabulary and its backward then run on the response tokens alone, not on the
    # (much longer) prompts: what makes the update cost about a bare forward + backward.
    b, t = input_ids.shape
    # zeros that still hang on the graph: a micro-batch with no trained token (the padding that
    # keeps DDP / FSDP processes in step) must run a backward, and its collectives, like any
    out = logits[..., 0].float() * 0.0
    for i in range(b):
        ids_row = input_ids[i, 1:]
        if only is None:
            idx = torch.arange(t - 1, device=input_ids.device)
        else:
            idx = only[i, 1:].nonzero(as_tuple=True)[0]
            if idx.numel() == 0:
                continue
        lg = logits[i, idx].float()  # logits at position p predict token p + 1
        if temperature != 1.0:
            lg = lg / temperature
        picked = lg.gather(-1, ids_row[idx].unsqueeze(-1)).squeeze(-1)
        out = out.index_put((torch.full_like(idx, i), idx + 1), picked - torch.logsumexp(lg, -1))
    return out


def token_logprobs(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    only: Tensor | None = None,
    temperature: float = 1.0,
    chunk: int = 0,
) -> Tensor:
    """(B, T) log-probs aligned with input_ids (entry [b, t] scores token t); differentiable.
    ``only``: score just these (B, T) tokens, 0 elsewhere. ``temperature``: of softmax(logits/T).
    ``chunk`` > 0 (with ``only``): the head runs over at most ``chunk`` scored positions at a
    time, each recomputed in the backward (``chunked_logprobs``): same numbers, one chunk's
    logits in memory instead of the micro-batch's (B, C, V). A model whose forward has no
    ``logits_to_keep`` (not a transformers causal LM: the tests' toy modules) has no head to
    chunk and takes the full-logits path."""
    if only is not None and takes_logits_to_keep(model):
        # the head runs only where a scored token is predicted: no (B, T, V) logits over the
        # prompts (at a 248k vocabulary, gigabytes per micro-batch)
        keep = only[:, 1:].bool().any(0).nonzero(as_tuple=True)[0]
        if keep.numel() == 0:  # nothing scored: one position keeps the graph (and collectives)
            keep = torch.zeros(1, dtype=torch.long, device=input_ids.device)
        if chunk > 0:
            return _chunked(model, input_ids, attention_mask, keep, only, temperature, chunk)
        out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=keep)
        return _logprobs_at(out.logits, keep, input_ids, only, temperature)
    logits = _logits(model, input_ids, attention_mask)
    return logprobs_from_logits(logits, input_ids, only, temperature)


def _chunked(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    keep: Tensor,
    only: Tensor,
    temperature: float,
    chunk: int,
) -> Tensor:
    b, t = input_ids.shape
    fits = int(keep.max()) + 1 < t  # False only for one-token rows: nothing to score
    if fits:  # column j predicts token keep[j] + 1
        targets, scored = input_ids[:, keep + 1], only[:, keep + 1].bool()
    else:
        targets = torch.zeros_like(input_ids[:, :1])
        scored = torch.zeros_like(targets, dtype=torch.bool)
    lp = chunked_model_logprobs(
        model, input_ids, attention_mask, keep, targets, scored, chunk, temperature
    )
    full = lp.new_zeros((b, t))
    # column j of lp scores token keep[j] + 1; a zero-sum still hangs on the graph
    return full.index_copy(1, keep + 1, lp) if fits else full + lp.sum() * 0.0


def takes_logits_to_keep(model: nn.Module) -> bool:
    """Whether the (possibly wrapped: DDP, DeepSpeed) model's forward has ``logits_to_keep``
    (transformers causal LMs since 4.50)."""
    import inspect

    inner = getattr(model, "module", model)
    cls = type(inner)
    cached = _KEEP.get(cls)
    if cached is None:
        try:
            cached = "logits_to_keep" in inspect.signature(cls.forward).parameters
        except (TypeError, ValueError):
            cached = False
        _KEEP[cls] = cached
    return cached


_KEEP: dict[type, bool] = {}


def _logprobs_at(
    logits: Tensor, keep: Tensor, input_ids: Tensor, only: Tensor, temperature: float
) -> Tensor:
    """(B, T) log-probs from logits kept at positions ``keep`` (logits[:, j] predicts token
    keep[j] + 1); 0 where ``only`` is false. Same math as ``logprobs_from_logits``."""
    b, t = input_ids.shape
    out = logits.new_zeros((b, t), dtype=torch.float32) + logits[:, :1, 0].float() * 0.0
    if not keep.numel() or int(keep.max()) + 1 >= t:
        return out  # no kept position predicts a token of the sequence
    targets = input_ids[:, keep + 1]
    for i in range(b):
        cols = only[i, keep + 1].nonzero(as_tuple=True)[0]
        if cols.numel() == 0:
            continue
        lg = logits[i, cols].float()
        if temperature != 1.0:
            lg = lg / temperature
        picked = lg.gather(-1, targets[i, cols].unsqueeze(-1)).squeeze(-1)
        pos = keep[cols] + 1
        out = out.index_put((torch.full_like(pos, i), pos), picked - torch.logsumexp(lg, -1))
    return out


@torch.no_grad()
def frozen_logprobs(
    model: nn.Module, batch: PolicyBatch, temperature: float = 1.0, chunk: int = 0
) -> Tensor:
    """Log-probs under a model without building a graph: the old policy or the reference, at
    the sampling ``temperature`` (the loss's). Only the batch's trained tokens are scored.
    ``chunk``: ``LossConfig.logits_chunk_tokens`` (no graph: a plain loop over chunks)."""
    ids, mask = batch.input_ids, batch.attention_mask
    lp = token_logprobs(model, ids, mask, batch.loss_mask, temperature, chunk)
    return lp.float()


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
    ids, chunk = batch.input_ids, cfg.logits_chunk_tokens
    logp = token_logprobs(model, ids, batch.attention_mask, mask, cfg.temperature, chunk)
    # No stored old log-probs = one update per rollout: the ratio is 1 but still carries gradient.
    old = batch.old_logprobs if batch.old_logprobs is not None else logp.detach()
    adv = batch.advantages.to(logp.dtype)
    surrogate, was_clipped = clipped_surrogate(logp, old.to(logp.dtype), adv, cfg.clip_eps)
    if cfg.is_cap is not None:
        surrogate = surrogate * sampling_weights(batch, old, cfg.is_cap)
    per_token = surrogate
    kl = torch.zeros_like(logp)
    if cfg.uses_reference:
        if batch.ref_logprobs is None:
            raise ValueError(
                "beta != 0 but the batch has no ref_logprobs: fill them with "
                "frozen_logprobs(reference, batch) or set LossConfig(beta=0)"
            )
        kl = kl_k3(logp, batch.ref_logprobs.to(logp.dtype))
        per_token = surrogate + cfg.beta_per_token(batch.region, kl.dtype) * kl
    loss = aggregate(per_token, mask, cfg.aggregation, cfg.max_tokens, denominator)
    return loss, _diagnostics(loss, surrogate, kl, was_clipped, logp, old, adv, batch, cfg)


@torch.no_grad()
def sampling_weights(batch: PolicyBatch, old: Tensor, cap: float) -> Tensor:
    # TRL Eq. truncated-IS (vllm_importance_sampling_mode "token_truncate"):
    # w_t = min(pi_old(y_t) / pi_sampler(y_t), cap), a constant weight on the token's loss
    if batch.sampling_logprobs is None:
        raise ValueError(
            "is_cap is set but the batch has no sampling_logprobs (the rollout engine's "
            "per-token log-probs); only the vllm engine reports them"
        )
    # a token the engine gave no log-prob for gets weight 1 (TRL: nan_to_num of the difference)
    diff = torch.nan_to_num(old.float() - batch.sampling_logprobs.float(), nan=0.0)
    w = torch.exp(diff).clamp(max=cap)
    return torch.where(batch.loss_mask, w, torch.zeros_like(w))


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
    gap, seen_n = 0.0, 0
    if batch.sampling_logprobs is not None:
        seen = mask & ~torch.isnan(batch.sampling_logprobs)
        seen_n = int(seen.sum())
        gap = float((batch.sampling_logprobs.float() - old.float()).abs()[seen].sum())
    return LossDiagnostics(
        loss=float(loss),
        policy_loss=float(aggregate(surrogate, mask, cfg.aggregation, cfg.max_tokens)),
        kl=float((kl * m).sum() / n),
        clip_fraction=float((was_clipped & mask).sum() / n),
        ratio_mean=float((torch.exp(logp - old) * m).sum() / n),
        adv_nonzero_rate=float(((adv != 0) & mask).sum() / n),
        entropy=float((-logp * m).sum() / n),
        tokens=tokens,
        sampler_gap_sum=gap,
        sampler_tokens=seen_n,
    )
