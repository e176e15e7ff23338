"""Stages 1 (planner SFT) and 2 (reward model): the stages that build data and fit on it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainers.cppo_pipeline import ranks, rm_base
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.config import CPPOPipelineConfig, RMStageConfig
from trainers.cppo_pipeline.exposure import write_exposure
from trainers.cppo_pipeline.judge import Judge, PlanItem
from trainers.cppo_pipeline.negatives import (
    LabelledTuple,
    balance,
    make_negatives,
    split_by_problem,
)
from trainers.cppo_pipeline.pool import pool_records
from trainers.cppo_pipeline.sft import SFTLayout, sft_rows, train_sft
from trainers.cppo_pipeline.sft_funnel import run_funnel
from trainers.cppo_pipeline.stages import PipelineStop, StageContext, StageResult
from trainers.engine import artifacts
from trainers.harness import (
    DEFAULT_VERSION,
    Backend,
    GenRequest,
    HFBackend,
    OutDir,
    Problem,
    SamplingParams,
    load_model,
    load_prompt,
    plan_tuple,
    quote,
    render,
)
from trainers.harness import training_schema as schema

CHECKPOINT = "planner"  # the SFT planner: an artifact of the one checkpoint format
SFT_SET = "sft_set.jsonl"
RM_DIR = "reward_model"
VAL_SCORES = schema.VAL_SCORES  # GateRecords (cppo_bench.store.training_schema)
RM_DATA = "rm_data.jsonl"  # train + val items, label, source, text, score (diagnosis)


@dataclass
class PipelineInputs:
    problems: list[Problem]  # the decontaminated training pool
    source: str
    model: str | None  # base policy (None: embedded)
    judge: Judge
    config: CPPOPipelineConfig
    rm_model: str | None = None
    removed: list[dict[str, Any]] = field(default_factory=list)
    eval_sets: list[str] = field(default_factory=list)
    seed: int = 0


def subset(problems: Sequence[Problem], n: int) -> list[Problem]:
    return list(problems[:n] if n else problems)


def policy_backend(path: str | None) -> tuple[Any, Any, HFBackend]:
    device = ranks.device()  # this process's device, not every process's cuda:0
    model, tok, model_id = load_model(path, dtype=torch.float32)
    model = model.to(device)
    return model, tok, HFBackend(model, tok, model_id, device=device, batch_size=8)


def sample_tuples(
    backend: Backend,
    problems: Sequence[Problem],
    k: int,
    n: int,
    max_tokens: int,
    seed: int = 0,
    version: str = "",
) -> list[tuple[Problem, tuple[str, ...]]]:
    """``n`` planner tuples per problem under the PLAN prompt of the run's ``version`` (what
    CPPO will sample)."""
    v = version or DEFAULT_VERSION
    stop = load_prompt("plan", v).render_stop(n_next=k + 1)
    reqs = [
        GenRequest(
            SamplingParams(0.7, 0.95, max_tokens, seed + i, stop),
            messages=render("plan", p, v, n=k, n_next=k + 1),
            tag="planner",
        )
        for p in problems
        for i in range(n)
    ]
    results = backend.generate(reqs)
    out = []
    for j, r in enumerate(results):
        p = problems[j // n]
        plans, _ = plan_tuple(r.text, k, problem=p)
        out.append((p, tuple(plans)))
    return out


def judge_tuples(
    judge: Judge, tuples: Sequence[tuple[Problem, tuple[str, ...]]], k: int
) -> list[LabelledTuple]:
    verdicts = judge([PlanItem(p, t, k) for p, t in tuples])
    return [
        LabelledTuple(p, t, int(v.valid), f"judge:{v.judge}")
        for (p, t), v in zip(tuples, verdicts, strict=True)
    ]


def read_seeds(path: str | None) -> dict[str, list[str]] | None:
    """Seed candidates (JSONL of problem_id, candidates); a relative path is looked up in
    trainers/configs/ when it does not exist as given."""
    if not path:
        return None
    from trainers.engine.layers import CONFIG_DIR, ConfigError

    file = Path(path) if Path(path).exists() else CONFIG_DIR / path
    if not file.is_file():
        raise ConfigError(f"config sft.seed_candidates: no such file {quote(path)}")
    out: dict[str, list[str]] = {}
    for lineno, r in schema.read_jsonl(file):
        ok = isinstance(r, dict) and isinstance(r.get("problem_id"), str)
        cands = r.get("candidates") if ok else None
        if not (isinstance(cands, list) and all(isinstance(c, str) for c in cands)):
            raise ConfigError(f"{file}:{lineno}: expected {{problem_id, candidates: [text]}}")
        out[r["problem_id"]] = list(cands)
    return out


def stage_sft(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    c = inp.config.sft
    k = inp.config.k
    model, tok, backend = policy_backend(inp.model)
    params = SamplingParams(c.temperature, 0.95, c.candidate_max_tokens, 0)
    pool = subset(inp.problems, c.problems)
    exposure = write_exposure(
        ctx.folder,
        [
            ("Plan candidates (base policy)", inp.source, pool, "self-generated"),
            (f"Plan judge ({inp.judge.name})", inp.source, pool, "candidate admission only"),
        ],
    )
    examples, counts = run_funnel(
        pool,
        backend,
        inp.judge,
        k=k,
        n_candidates=c.n_candidates,
        samples=c.samples,
        params=params,
        seeds=read_seeds(c.seed_candidates),
        version=inp.config.engine.prompt_version,
    )
    out = OutDir(ctx.folder)
    with out.writing(SFT_SET) as fh:
        for ex in examples:
            fh.write(
                json.dumps(
                    {
                        "problem_id": ex.problem.problem_id,
                        "methods": ex.methods,
                        "target": ex.target,
                        "judge": inp.judge.name,
                    }
                )
                + "\n"
            )
    out.write_text("funnel.json", json.dumps(counts.as_dict(), indent=2))
    with out.writing("candidates.jsonl") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in counts.records)
    if len(examples) < c.min_examples:
        raise PipelineStop(
            "sft",
            f"SFT set has {len(examples)} problem(s) with >= {k} "
            f"admissible candidates (< min_examples {c.min_examples}); funnel "
            f"{counts.as_dict()}",
            revisit="sft",
        )
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)

    def save(state: dict[str, Any] | None) -> None:
        meta = {"base_model": inp.model}
        with artifacts.saving(ctx.folder / CHECKPOINT, "planner", meta) as tmp:
            artifacts.save_pretrained(model, tmp, state)
            tok.save_pretrained(tmp)

    losses = train_sft(
        model,
        sft_rows(tok, examples, k, inp.config.engine.prompt_version),
        pad,
        epochs=c.epochs,
        batch_size=c.batch_size,
        lr=c.lr,
        seed=inp.seed,
        log=ctx.log,
        layout=SFTLayout.from_engine(inp.config.engine),  # the engine's memory layout
        save=save,
    )
    return StageResult(
        (SFT_SET, "funnel.json", f"{CHECKPOINT}/{artifacts.MANIFEST}", exposure),
        {
            "funnel": counts.as_dict(),
            "sft_loss_first": losses[0],
            "sft_loss_last": losses[-1],
            "base_model": inp.model or "embedded",
            "judge": inp.judge.name,
            "problems": [p.problem_id for p in subset(inp.problems, c.problems)],
        },
        {"planner": str(ctx.folder / CHECKPOINT)},
    )


def rm_config(inp: PipelineInputs, c: RMStageConfig) -> rmod.RMConfig:
    model = rm_base.resolve(inp.rm_model, c, torch.cuda.is_available())
    return rmod.RMConfig(
        kind=c.kind,
        model=model,
        epochs=c.epochs,
        batch_size=c.batch_size,
        lr=c.lr,
        tau=inp.config.tau,
        min_recall=c.min_recall,
        seed=inp.seed,
        checkpointing=inp.config.engine.gradient_checkpointing,
    )


def write_scores(
    path: Path, scores: torch.Tensor, items: Sequence[LabelledTuple], tau: float, split: str
) -> None:
    with OutDir(path.parent).writing(path.name) as fh:
        for s, it in zip(scores.tolist(), items, strict=True):
            fh.write(
                json.dumps(
                    {
                        "gate_prob": min(max(s, 0.0), 1.0),
                        "label": it.label,
                        "tau": tau,
                        "split": split,
                        "prompt_id": it.prompt_id,
                        "source": it.source,
                    }
                )
                + "\n"
            )


def write_rm_data(
    path: Path,
    rm: rmod.RewardModel,
    train: Sequence[LabelledTuple],
    val: Sequence[LabelledTuple],
    val_scores: torch.Tensor,
) -> None:
    """Every RM item with its split, label, source, text and score, written before the
    acceptance check so a refused RM leaves the data it was judged on."""
    train_scores = rmod.probabilities(rm, train)
    with OutDir(path.parent).writing(path.name) as fh:
        for split, items, scores in (("train", train, train_scores), ("val", val, val_scores)):
            for it, s in zip(items, scores.tolist(), strict=True):
                rec = {"split": split, "score": round(s, 4), **pool_records([it])[0]}
                fh.write(json.dumps(rec) + "\n")


def stage_rm(ctx: StageContext, inp: PipelineInputs) -> StageResult:
    c = inp.config.rm
    k = inp.config.k
    policy = ctx.output("sft", "planner")
    sft_set = ctx.use("sft", SFT_SET)
    _, _, backend = policy_backend(policy)
    problems = subset(inp.problems, c.problems)
    sampled = judge_tuples(
        inp.judge,
        sample_tuples(
            backend,
            problems,
            k,
            c.samples_per_problem,
            inp.config.planner_max_tokens,
            inp.seed,
            inp.config.engine.prompt_version,
        ),
        k,
    )
    backend.close()
    by_id = {p.problem_id: p for p in inp.problems}
    gold = [
        LabelledTuple(
            by_id[r["problem_id"]], tuple(r["methods"]), 1, f"judge:{r['judge']} (sft funnel)"
        )
        for _, r in schema.read_jsonl(sft_set)
    ]
    positives = [t for t in sampled if t.label == 1] + gold
    pool = sampled + gold + make_negatives(positives, c.negatives_per_tuple)
    data = balance(pool)
    train, val = split_by_problem(data, c.val_fraction)
    ids = {t.prompt_id for t in train}
    exposure = write_exposure(
        ctx.folder,
        [
            (f"Plan judge labels ({inp.judge.name})", inp.source, problems, "planner samples"),
            ("RM training labels", inp.source, [by_id[i] for i in sorted(ids)], "balanced 1:1"),
            (
                "RM val (threshold, acceptance)",
                inp.source,
                [by_id[i] for i in sorted({t.prompt_id for t in val})],
                "disjoint from RM train",
            ),
        ],
    )
    cfg = rm_config(inp, c)
    rm = rmod.RM_KINDS.get(cfg.kind).create(cfg)
    history = rmod.fit(rm, train, cfg)
    for epoch, loss in enumerate(history, 1):
        ctx.log(epoch, {"rm_bce": loss})
    metrics, scores = rmod.evaluate(rm, val, cfg)
    write_scores(ctx.folder / VAL_SCORES, scores, val, metrics.tau, "heldout")
    write_rm_data(ctx.folder / RM_DATA, rm, train, val, scores)
    counts = {
        "pool": len(pool),
        "balanced": len(data),
        "train": len(train),
        "val": len(val),
        "sampled": len(sampled),
        "sampled_valid": sum(t.label for t in sampled),
        "gold": len(gold),
        "judge": inp.judge.name,
    }
    OutDir(ctx.folder).write_text(
        "rm_metrics.json", json.dumps({**metrics.as_dict(), **counts}, indent=2)
    )
    try:
        rmod.accept(metrics)
    except rmod.RMRejected as err:
        raise PipelineStop("rm", f"{err} (metrics: {metrics.as_dict()})", revisit="rm") from None
    rmod.save(rm, ctx.folder / RM_DIR, metrics, cfg, pool)
    return StageResult(
        (
            f"{RM_DIR}/{artifacts.MANIFEST}",
            VAL_SCORES,
            RM_DATA,
            "rm_metrics.json",
            exposure,
        ),
        {
            "metrics": metrics.as_dict(),
            "data": counts,
            "kind": cfg.kind,
            "base_model": cfg.model or "embedded",
        },
        {"reward_model": str(ctx.folder / RM_DIR)},
    )
