"""CPPO pipeline: ablation rewards, audit, judge rules, negatives, stage runner (no models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers.cppo_tiny import METHODS, problems
from trainers.core.cppo import PromptRollouts, SolverBranch, TupleRollout
from trainers.core.cppo_ablation import ABLATIONS, ablation, tuple_rewards
from trainers.core.cppo_joint import PlateauRule, joint_rows
from trainers.cppo_pipeline.audit import AuditThresholds, audit
from trainers.cppo_pipeline.judge import PlanItem, RulesJudge, parse_judge_spec
from trainers.cppo_pipeline.negatives import (
    LabelledTuple,
    balance,
    make_negatives,
    split_by_problem,
)
from trainers.cppo_pipeline.stages import PipelineStop, StageResult, is_complete, run_stages

GATE = torch.tensor([1.0, 0.0, 1.0, 0.0])
BRANCH = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])


def test_ablation_rows_change_the_planner_reward_as_specified() -> None:
    r = {n: tuple_rewards(GATE, BRANCH, ablation(n)) for n in ("cppo", "no_gate", "gate_only")}
    assert r["cppo"].r_out.tolist() == [1, 1, 0, 0]
    assert r["cppo"].r_plan.tolist() == [1, 0, 0, 0]  # J * R_out
    assert r["no_gate"].r_plan.tolist() == [1, 1, 0, 0]  # R_out
    assert r["gate_only"].r_plan.tolist() == [1, 0, 1, 0]  # J
    assert ablation("frozen_solver").train_solver is False
    assert ablation("no_warmup").warmup is False
    assert [ablation(f"m{m}", m=8).m for m in (1, 2, 4, 8)] == [1, 2, 4, 8]  # the row fixes M
    assert ablation("cppo").m == 8 and ablation("no_gate", m=4).m == 4
    with pytest.raises(KeyError, match="unknown ablation 'bogus'; known: cppo"):
        ablation("bogus")
    assert "m8" in ABLATIONS.names()


def _prompts(m: int, n_prompts: int = 2) -> list[PromptRollouts]:
    out = []
    for p in range(n_prompts):
        tuples = []
        for j in range(m):
            ok = float((p + j) % 2)
            branches = tuple(SolverBranch((5, 6), (7, 8, 9), float(i == 0) * ok) for i in range(2))
            tuples.append(TupleRollout((1, 2, 3), (4, 4), float(j % 2 == 0), branches))
        out.append(PromptRollouts(tuple(tuples)))
    return out


def test_frozen_solver_and_m1_rows() -> None:
    full = joint_rows(_prompts(2), ablation("m2"))
    frozen = joint_rows(_prompts(8), ablation("frozen_solver"))
    assert {r.segments[1].region.name for r in full.rows} == {"PLANNER", "SOLVER"}
    assert {r.segments[1].region.name for r in frozen.rows} == {"PLANNER"}
    rplan = [1.0 * (p % 2) for p in range(4)]  # gate of tuple 0 is 1; R_out alternates by prompt
    # M = 1: the study's single-sample REINFORCE, A = R_plan
    single = joint_rows(_prompts(1, n_prompts=4), ablation("m1"))
    adv = [r.segments[1].advantage for r in single.rows if r.segments[1].region.name == "PLANNER"]
    assert adv == pytest.approx(rplan)
    # option m1_loo: REINFORCE with the leave-one-out baseline over the other prompts
    single = joint_rows(_prompts(1, n_prompts=4), ablation("m1_loo"))
    adv = [r.segments[1].advantage for r in single.rows if r.segments[1].region.name == "PLANNER"]
    loo = [x - (sum(rplan) - x) / 3 for x in rplan]
    assert adv == pytest.approx(loo)
    with pytest.raises(ValueError, match="expects M = 8"):
        joint_rows(_prompts(2), ablation("cppo"))


def test_audit_stops_at_zero_density_naming_the_stage() -> None:
    ok = audit(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]))
    assert ok.passed and ok.revisit is None
    no_pass = audit(torch.tensor([1.0, 1.0]), torch.tensor([0.0, 0.0]))
    assert (no_pass.passed, no_pass.revisit) == (False, "sft")
    vetoed = audit(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0]))
    assert (vetoed.passed, vetoed.revisit) == (False, "rm")
    strict = audit(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.0]), AuditThresholds(0.6, 0.0))
    assert strict.revisit == "sft"


def test_rules_judge_and_spec() -> None:
    p = problems()[0]
    good = PlanItem(p, tuple(METHODS["graph"]), 4)
    generic = PlanItem(
        p, (*METHODS["graph"][:3], "Think step by step and use any correct algorithm."), 4
    )
    foreign = PlanItem(p, (*METHODS["graph"][:3], METHODS["prime"][0]), 4)
    leak = PlanItem(p, (*METHODS["graph"][:3], "Dijkstra on the graph; the answer is 100."), 4)
    v = RulesJudge()([good, generic, foreign, leak])
    assert [x.valid for x in v] == [True, False, False, False]
    assert any("generic" in r for r in v[1].reasons)
    assert any("off_topic" in r for r in v[2].reasons)
    assert any("answer_leak" in r for r in v[3].reasons)
    assert parse_judge_spec("rules") == ("rules", None, None)
    assert parse_judge_spec("openai:qwen") == ("combined", "openai", "qwen")
    assert parse_judge_spec("llm=vllm:m") == ("llm", "vllm", "m")


def test_rules_no_topic_judge_drops_only_the_topic_rule() -> None:
    # the `strategies` task: a prompt names a category, a method names a strategy; no word is
    # shared, so `rules` rejects every method as off topic and CPPO's stage 1 stopped
    from cppo_bench.benchmarks import strategies as task
    from trainers.cppo_pipeline.judge import make_judge

    p = task.problems("train")[0]
    plausible = task.plausible(task.category_of(p))
    items = [
        PlanItem(p, plausible, 4),
        PlanItem(p, (plausible[0], *plausible[:3]), 4),  # a repeat
        PlanItem(p, (*plausible[:3], "Think step by step and use any correct algorithm."), 4),
        PlanItem(p, (plausible[0],), 1),  # one SFT candidate
    ]
    rules, no_topic = make_judge("rules"), make_judge("rules_no_topic")
    assert no_topic.name == "rules_no_topic" and rules.name == "rules"
    assert [v.valid for v in rules(items)] == [False] * 4
    assert all(any("off_topic" in r for r in v.reasons) for v in rules(items))
    verdicts = no_topic(items)
    assert [v.valid for v in verdicts] == [True, False, False, True]
    assert any("duplicates" in r for r in verdicts[1].reasons)
    assert any("generic" in r for r in verdicts[2].reasons)
    assert not any("off_topic" in r for v in verdicts for r in v.reasons)
    # prose problems: the default judge keeps its topic rule
    q = problems()[0]
    foreign = PlanItem(q, (*METHODS["graph"][:3], METHODS["prime"][0]), 4)
    assert not RulesJudge()([foreign])[0].valid


def test_rules_judge_rejects_near_duplicates_and_rm_features_flag_each_defect() -> None:
    from trainers.cppo_pipeline.ngram_rm import FEATURES, lexical_features

    p = problems()[0]
    good = METHODS["graph"]
    reworded = (*good[:3], good[0].replace(".", " fast."))  # same words plus one
    v = RulesJudge()([PlanItem(p, reworded, 4)])[0]
    assert not v.valid and any("near_duplicate" in r for r in v.reasons)
    assert RulesJudge()([PlanItem(p, tuple(good), 4)])[0].valid
    base = LabelledTuple(p, tuple(good), 1, "judge:rules")
    feats = dict(zip(FEATURES, lexical_features(base), strict=True))
    assert feats["code"] == feats["answer"] == feats["generic"] == feats["literal_dup"] == 0.0
    for kind, feature in (
        ("code_leak", "code"),
        ("answer_leak", "answer"),
        ("generic_advice", "generic"),
    ):
        neg = next(n for n in make_negatives([base], 5) if n.source == f"negative:{kind}")
        assert dict(zip(FEATURES, lexical_features(neg), strict=True))[feature] == 1.0, kind
    dup = next(n for n in make_negatives([base], 5) if "reworded" in n.source)
    assert lexical_features(dup)[FEATURES.index("dup_jaccard")] > feats["dup_jaccard"]


def test_negatives_are_well_formed_balanced_and_split_by_problem() -> None:
    pos = [LabelledTuple(p, tuple(METHODS[p.problem_id]), 1, "judge:rules") for p in problems()]
    neg = make_negatives(pos, per_tuple=2)
    kinds = {n.source for n in neg}
    assert kinds == {
        f"negative:{k}"
        for k in (
            "answer_leak",
            "code_leak",
            "foreign_method",
            "generic_advice",
            "reworded_duplicate",
        )
    }
    assert all(len(n.plans) == 4 and n.label == 0 for n in neg)
    # the rules judge rejects every made negative except the reworded duplicate (the LLM's job)
    verdicts = RulesJudge()([PlanItem(n.problem, n.plans, 4) for n in neg])
    caught = {n.source for n, v in zip(neg, verdicts, strict=True) if not v.valid}
    assert caught >= {"negative:code_leak", "negative:answer_leak", "negative:generic_advice"}
    bal = balance(pos + neg)
    for p in problems():
        labels = [b.label for b in bal if b.prompt_id == p.problem_id]
        assert labels.count(1) == labels.count(0) == 1
    train, val = split_by_problem(bal, 0.25)
    assert not {t.prompt_id for t in train} & {t.prompt_id for t in val} and val


def test_plateau_rule() -> None:
    rule = PlateauRule(patience=2, min_gain=0.05, max_steps=10)
    assert rule.stop([0.1, 0.3, 0.5]) is None
    assert "plateau" in (rule.stop([0.1, 0.5, 0.52, 0.51]) or "")
    assert "target" in (rule.stop([0.1, 0.99]) or "")
    assert "max_steps" in (rule.stop([0.1] * 10) or "")


def test_stage_runner_skips_complete_stages_and_records_inputs(tmp_path: Path) -> None:
    calls: list[str] = []

    def first(ctx):
        calls.append("a")
        (ctx.folder / "data.json").write_text("{}")
        return StageResult(("data.json",), {"n": 1})

    def second(ctx):
        calls.append("b")
        ctx.use("a", "data.json")
        if len(calls) < 3:
            raise PipelineStop("b", "not yet", revisit="a")
        (ctx.folder / "out.txt").write_text("x")
        return StageResult(("out.txt",))

    stages = {"a": first, "b": second}
    with pytest.raises(PipelineStop, match="stage b: not yet"):
        run_stages(tmp_path, stages, ["a", "b"], {}, echo=lambda s: None)
    stopped = json.loads((tmp_path / "b" / "train_manifest.json").read_text())
    assert stopped["status"] == "stopped" and stopped["revisit"] == "a"
    assert run_stages(tmp_path, stages, ["a", "b"], {}, echo=lambda s: None) == {
        "a": "skipped",
        "b": "ran",
    }
    assert calls == ["a", "b", "b"] and is_complete(tmp_path / "b")
    manifest = json.loads((tmp_path / "b" / "train_manifest.json").read_text())
    assert list(manifest["consumed"]) == ["a/data.json"]
    assert manifest["consumed"]["a/data.json"]["manifest_sha256"]
    (tmp_path / "b" / "out.txt").unlink()  # an artifact gone: the stage is incomplete again
    assert not is_complete(tmp_path / "b")
