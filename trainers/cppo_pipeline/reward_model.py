"""The plan-validity reward model p_psi and its acceptance rule (study stage 2).

``generative`` (the study's p_psi): a causal LM reads (problem, tuple) followed by a yes/no
question; p(valid) = softmax over the next-token logits of the two answer words, i.e.
sigmoid(logit_yes - logit_no). ``ngram`` (ngram_rm.py): the hashed n-gram classifier of
trainers.core.gate plus two lexical features, a fast named alternative. Both expose ``logits(items)``, so one BCE loop (prompt x label
balanced, Eq. gate-bce) trains both, and refreshing resumes that loop on the saved weights.
A checkpoint is accepted only when held-out AUC, balanced accuracy and precision/recall at tau
pass the pre-registered rule; otherwise ``RMRejected`` names the failing metrics.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from trainers.core.gate_metrics import (
    PREREGISTERED_RULE,
    AcceptanceRule,
    GateMetrics,
    balance_weights,
    choose_tau,
    gate_metrics,
)
from trainers.core.loss import takes_logits_to_keep
from trainers.cppo_pipeline import ngram_rm
from trainers.cppo_pipeline.config import RMStageConfig
from trainers.cppo_pipeline.negatives import LabelledTuple
from trainers.cppo_pipeline.sft import checkpointed
from trainers.harness import TAU, Registry

META = "rm.json"  # kept only to name the old layout in errors; the meta is in artifact.json
_QUESTION = "\n\nDo these methods follow every rule for this problem? Answer Yes or No.\nAnswer:"


class RMRejected(Exception):
    """The reward model's held-out metrics fail the acceptance rule."""

    def __init__(self, metrics: GateMetrics, failed: list[str]) -> None:
        self.metrics, self.failed = metrics, failed
        super().__init__("reward model rejected: " + "; ".join(failed))


@dataclass(frozen=True)
class RMConfig:
    """The reward model's own settings, built from the rm stage's config (whose defaults are
    the study's: the shared ones are taken from there, never written twice)."""

    kind: str = RMStageConfig.kind
    model: str | None = None  # generative base model; None = the embedded SmolLM2
    epochs: int = RMStageConfig.epochs
    batch_size: int = RMStageConfig.batch_size
    lr: float = RMStageConfig.lr
    max_tokens: int = 512  # prompt tokens kept (the tail: methods and question)
    max_statement_chars: int = 1500
    tau: float | None = TAU  # None: choose on val for min_recall (study: 0.17)
    min_recall: float = RMStageConfig.min_recall
    answer_words: tuple[str, str] = ("Yes", "No")
    seed: int = 0
    checkpointing: bool = False  # the engine's gradient_checkpointing: recompute layers in fit

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RMConfig:
        known = {f.name for f in fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise ValueError(f"unknown rm setting(s) {bad}; known: {sorted(known)}")
        if "answer_words" in d:
            d = {**d, "answer_words": tuple(d["answer_words"])}
        return cls(**d)


class RewardModel(Protocol):
    kind: str

    @property
    def module(self) -> nn.Module: ...  # (read-only here: each kind holds its own subclass)

    def logits(self, items: Sequence[LabelledTuple]) -> Tensor: ...

    def save(self, folder: Path) -> dict[str, Any]: ...  # writes weights; returns its meta


class GenerativeVerifier:
    kind = "generative"

    def __init__(self, model: nn.Module, tokenizer: Any, cfg: RMConfig) -> None:
        self.module, self.tokenizer, self.cfg = model, tokenizer, cfg
        ids = [tokenizer.encode(w, add_special_tokens=False) for w in cfg.answer_words]
        if any(not i for i in ids) or ids[0][0] == ids[1][0]:
            raise ValueError(f"answer words {cfg.answer_words} need distinct first tokens")
        self.yes_id, self.no_id = ids[0][0], ids[1][0]
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)

    def prompt(self, item: LabelledTuple) -> str:
        statement = item.problem.statement[: self.cfg.max_statement_chars]
        return f"Problem:\n{statement}\n\nMethods:\n{item.text}{_QUESTION}"

    def logits(self, items: Sequence[LabelledTuple]) -> Tensor:
        # Eq. rm-logit: logit(valid) = z[yes] - z[no] at the next-token position
        enc = [
            self.tokenizer.encode(self.prompt(it), add_special_tokens=False)[-self.cfg.max_tokens :]
            for it in items
        ]
        width = max(len(e) for e in enc)
        ids = torch.full((len(enc), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, e in enumerate(enc):
            ids[i, : len(e)] = torch.tensor(e)
            mask[i, : len(e)] = 1
        device = next(self.module.parameters()).device
        ends = mask.sum(1) - 1
        if takes_logits_to_keep(self.module):
            # the head only where a row ends (at most one position per row), not (B, T, V)
            # logits: at a 248k vocabulary the full ones were gigabytes per batch
            keep, col = torch.unique(ends, return_inverse=True)
            out = self.module(
                input_ids=ids.to(device), attention_mask=mask.to(device),
                logits_to_keep=keep.to(device),
            ).logits  # fmt: skip
            last = out[torch.arange(len(enc)), col.to(device)].float()
        else:
            out = self.module(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            last = out[torch.arange(len(enc)), ends.to(device)].float()
        return last[:, self.yes_id] - last[:, self.no_id]

    def save(self, folder: Path) -> dict[str, Any]:
        from trainers.engine.artifacts import save_pretrained

        save_pretrained(self.module, folder / "model")
        self.tokenizer.save_pretrained(folder / "model")
        return {}


@dataclass(frozen=True)
class RMKind:
    create: Callable[[RMConfig], RewardModel]
    load: Callable[[Path, RMConfig, dict[str, Any]], RewardModel]  # folder, config, saved meta


def _device() -> str:
    from trainers.cppo_pipeline.ranks import device

    return device()  # this process's device, not a bare "cuda"


def _create_generative(cfg: RMConfig) -> RewardModel:
    from trainers.harness import load_model

    model, tok, _ = load_model(cfg.model, dtype=torch.float32)
    return GenerativeVerifier(model.to(_device()), tok, cfg)


def _load_generative(folder: Path, cfg: RMConfig, meta: dict[str, Any]) -> RewardModel:
    from trainers.harness import load_model

    model, tok, _ = load_model(str(folder / "model"), dtype=torch.float32)
    return GenerativeVerifier(model.to(_device()), tok, cfg)


RM_KINDS: Registry[RMKind] = Registry("reward model")
RM_KINDS.register("generative")(RMKind(_create_generative, _load_generative))
RM_KINDS.register("ngram")(
    RMKind(
        lambda cfg: ngram_rm.create(cfg.seed), lambda folder, cfg, meta: ngram_rm.load(folder, meta)
    )
)


def fit(rm: RewardModel, train: Sequence[LabelledTuple], cfg: RMConfig) -> list[float]:
    """Balanced BCE on the valid/invalid label (Eq. gate-bce); returns per-epoch mean losses.
    Called on a fresh model (stage 2) or a loaded one (refresh: fine-tuning resumes)."""
    if not train:
        raise ValueError("no reward-model training examples")
    torch.manual_seed(cfg.seed)
    labels = torch.tensor([float(t.label) for t in train])
    weights = balance_weights([t.prompt_id for t in train], [t.label for t in train])
    groups = rm.param_groups() if hasattr(rm, "param_groups") else rm.module.parameters()
    opt = torch.optim.AdamW(groups, lr=cfg.lr)
    rm.module.train()
    ckpt = cfg.checkpointing and hasattr(rm.module, "gradient_checkpointing_enable")
    with checkpointed(rm.module, ckpt):
        history = _epochs(rm, train, cfg, opt, labels, weights)
    rm.module.eval()
    return history


def _epochs(rm: Any, train: Sequence[LabelledTuple], cfg: RMConfig, opt: Any, labels: Tensor,
            weights: Tensor) -> list[float]:  # fmt: skip
    gen = torch.Generator().manual_seed(cfg.seed)
    bce = nn.BCEWithLogitsLoss(reduction="none")
    history = []
    for _ in range(cfg.epochs):
        total, n = 0.0, 0
        for idx in torch.randperm(len(train), generator=gen).split(cfg.batch_size):
            z = rm.logits([train[i] for i in idx.tolist()])
            w = weights[idx].to(z.device)
            loss = (bce(z, labels[idx].to(z.device)) * w).sum() / w.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + float(loss.detach()) * len(idx), n + len(idx)
        history.append(total / n)
    return history


@torch.no_grad()
def probabilities(rm: RewardModel, items: Sequence[LabelledTuple], batch: int = 16) -> Tensor:
    rm.module.eval()
    parts = [rm.logits(items[i : i + batch]) for i in range(0, len(items), batch)]
    return torch.sigmoid(torch.cat(parts)).cpu() if parts else torch.zeros(0)


def evaluate(
    rm: RewardModel, val: Sequence[LabelledTuple], cfg: RMConfig
) -> tuple[GateMetrics, Tensor]:
    """Held-out metrics at tau (fixed, or the largest tau with recall >= min_recall)."""
    scores = probabilities(rm, val)
    labels = [t.label for t in val]
    tau = cfg.tau if cfg.tau is not None else choose_tau(scores, labels, cfg.min_recall)
    return gate_metrics(scores, labels, tau), scores


def accept(metrics: GateMetrics, rule: AcceptanceRule = PREREGISTERED_RULE) -> None:
    failed = metrics.failures(rule)
    if failed:
        raise RMRejected(metrics, failed)


def save(
    rm: RewardModel,
    folder: Path,
    metrics: GateMetrics,
    cfg: RMConfig,
    pool: Sequence[LabelledTuple] = (),
) -> None:
    """An artifact of kind ``reward_model``: weights, the labelled pool it was trained on, and
    its meta (kind, tau, the metrics it was accepted on, config) in the manifest."""
    from trainers.cppo_pipeline.pool import write_pool
    from trainers.engine import artifacts
    from trainers.harness import OutDir

    with artifacts.saving(folder, "reward_model") as tmp:
        own = rm.save(tmp)
        write_pool(tmp, pool)
        meta = {"kind": rm.kind, "tau": metrics.tau, "metrics": asdict(metrics),
                "config": asdict(cfg), "model": own}  # fmt: skip
        OutDir(tmp).write_text(META, json.dumps(meta, indent=2))


def _meta(folder: Path) -> dict[str, Any]:
    from trainers.engine import artifacts
    from trainers.harness import DataError

    artifacts.read_manifest(folder, "reward_model")
    try:
        from trainers.harness import userfiles

        meta = userfiles.read_json(folder / META, userfiles.MAX_SMALL)
        GateMetrics(**meta["metrics"])
        float(meta["tau"])
        if meta["kind"] not in RM_KINDS:
            raise KeyError(meta["kind"])
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{folder / META}: not a reward-model record ({exc!s:.80})") from None
    return meta


def load(
    folder: Path, rule: AcceptanceRule | None = PREREGISTERED_RULE
) -> tuple[RewardModel, float]:
    """(model, tau) from a saved artifact; refuses one whose recorded metrics fail ``rule``
    (None: no check, for resuming training from a checkpoint accepted when it was written)."""
    meta = _meta(Path(folder))
    if rule is not None:
        accept(GateMetrics(**meta["metrics"]), rule)
    cfg = RMConfig.from_dict(meta["config"])
    return RM_KINDS.get(meta["kind"]).load(folder, cfg, meta.get("model") or {}), float(meta["tau"])


def gate_verdicts(rm: RewardModel, tau: float, items: Sequence[LabelledTuple]) -> Tensor:
    # study Eq. gate: J(x, S) = 1{p_psi(valid | x, S) >= tau}
    return (probabilities(rm, items) >= tau).float()
