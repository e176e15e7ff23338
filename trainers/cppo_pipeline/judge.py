"""The offline plan judge: labels (problem, methods) items against the plan-validity rubric.

Four judges, registered by name: ``rules`` (deterministic: the PLAN-contract checks of
cppo_bench.plan.contract plus three rubric checks that need no model: generic advice, off-topic
methods, and near-duplicate methods, word-set Jaccard >= 0.8 as in the SFT funnel),
``rules_no_topic`` (the same without the off-topic rule: for a task whose statements are not
prose, e.g. `strategies`, where a method names a strategy the statement never mentions), ``llm``
(any backend, prompt ``judge_plan_rubric``), and ``combined`` (valid only when both agree it
is valid; an LLM reply that breaks format falls back to the rules). Every verdict
carries the name of the judge that decided it, so manifests can record who labelled what.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from trainers.harness import (
    GENERIC_PLAN,
    Backend,
    GenRequest,
    Problem,
    Registry,
    SamplingParams,
    format_plans,
    load_prompt,
    parse_judge_verdict,
    validate_plans,
)

RUBRIC_PROMPT = "judge_plan_rubric"
_WORD = re.compile(r"[a-z][a-z0-9]+")
# Advice that fits every problem: the study's "generic advice" negatives look like this.
GENERIC_ADVICE = re.compile(
    r"\b(any (correct|efficient|suitable) (algorithm|approach|method)|think (carefully|step by "
    r"step)|read the problem|solve (it|the problem) (efficiently|correctly)|use (a|an) "
    r"(efficient|appropriate|suitable) (algorithm|approach)|standard approach|brute force "
    r"or optimi[sz]ed)\b",
    re.IGNORECASE,
)
DUPLICATE_JACCARD = 0.8  # word-set overlap above which two methods are one idea
STOPWORDS = set(
    "the a an of to and or in on for with each is are be by it its this that from as at we "
    "use using then than into all any one two can will not no method problem value values "
    "number numbers find compute count return output input given list array".split()
)


@dataclass(frozen=True)
class PlanItem:
    problem: Problem
    plans: tuple[str, ...]  # the methods under judgement (a tuple of K, or one candidate)
    k: int  # how many methods the item should hold


@dataclass(frozen=True)
class Verdict:
    valid: bool
    judge: str  # which judge decided
    reasons: tuple[str, ...] = field(default_factory=tuple)


class Judge(Protocol):
    name: str

    def __call__(self, items: Sequence[PlanItem]) -> list[Verdict]: ...


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def near_duplicate(a: str, b: str, threshold: float = DUPLICATE_JACCARD) -> bool:
    """One idea twice: the word sets of two methods overlap by >= ``threshold`` (Jaccard)."""
    wa, wb = set(re.findall(r"[a-z0-9]+", a.lower())), set(re.findall(r"[a-z0-9]+", b.lower()))
    return bool(wa | wb) and len(wa & wb) / len(wa | wb) >= threshold


def rubric_issues(item: PlanItem, topic: bool = True) -> list[str]:
    """Deterministic rubric checks: the PLAN contract plus generic, off-topic (when ``topic``)
    and near-duplicate methods (the SFT funnel's duplicate rule, applied within the tuple)."""
    report = validate_plans(list(item.plans), item.k, problem=item.problem)
    issues = list(report.issues)
    literal = {later for _, later in report.duplicates}
    near = [
        [i, j]
        for j, b in enumerate(item.plans)
        for i, a in enumerate(item.plans[:j])
        if j not in literal and a.strip() and b.strip() and near_duplicate(a, b)
    ]
    if near:
        issues.append(f"near_duplicate {near}")
    vocab = _content_words(item.problem.statement)
    for i, plan in enumerate(item.plans):
        if plan.strip() == GENERIC_PLAN or GENERIC_ADVICE.search(plan):
            issues.append(f"generic [{i}]")
        elif topic and plan.strip() and not (_content_words(plan) & vocab):
            # a method sharing no content word with the statement is about something else
            issues.append(f"off_topic [{i}]")
    return issues


class RulesJudge:
    """``topic=False``: no off-topic rule. The rule asks a method to share a content word
    with the statement, a proxy for "about this problem" that holds for prose statements only;
    on a generated task whose prompt names a category and whose methods name strategies, it
    rejects every method (docs/learning.md, CPPO)."""

    def __init__(self, topic: bool = True) -> None:
        self.topic = topic
        self.name = "rules" if topic else "rules_no_topic"

    def __call__(self, items: Sequence[PlanItem]) -> list[Verdict]:
        out = []
        for item in items:
            issues = rubric_issues(item, self.topic)
            out.append(Verdict(not issues, self.name, tuple(issues)))
        return out


class LLMJudge:
    """The rubric prompt through any backend; greedy, one word."""

    def __init__(self, backend: Backend, version: str = "v1", max_chars: int = 4000) -> None:
        self.backend = backend
        self.name = f"llm:{backend.name}:{backend.model_id}"
        self.prompt = load_prompt(RUBRIC_PROMPT, version)
        self.max_chars = max_chars  # statements are cut so a small judge's context holds

    def requests(self, items: Sequence[PlanItem]) -> list[GenRequest]:
        params = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=4, seed=0)
        return [
            GenRequest(
                params,
                messages=self.prompt.render(
                    k=it.k,
                    statement=it.problem.statement[: self.max_chars],
                    plans=format_plans(it.plans),
                ),
                tag="judge",
            )
            for it in items
        ]

    def raw(self, items: Sequence[PlanItem]) -> list[bool | None]:
        return [parse_judge_verdict(r.text) for r in self.backend.generate(self.requests(items))]

    def __call__(self, items: Sequence[PlanItem]) -> list[Verdict]:
        return [
            Verdict(bool(v), self.name, () if v else ("llm: INVALID" if v is False else "llm: ?",))
            for v in self.raw(items)
        ]


class CombinedJudge:
    """Rules AND LLM: the rules catch what a small model misses (counts, leaks, word limits),
    the model catches what rules cannot (duplicates in different words, wrong-task methods)."""

    def __init__(self, llm: LLMJudge) -> None:
        self.llm = llm
        self.rules = RulesJudge()
        self.name = f"combined(rules+{llm.name})"

    def __call__(self, items: Sequence[PlanItem]) -> list[Verdict]:
        rules = self.rules(items)
        # the model is only asked about items the rules admit: a rule failure is final
        ask = [i for i, v in enumerate(rules) if v.valid]
        answers = self.llm.raw([items[i] for i in ask]) if ask else []
        out = list(rules)
        for i, ans in zip(ask, answers, strict=True):
            if ans is None:  # the model broke format: the rules' verdict stands, and says so
                out[i] = Verdict(True, self.rules.name, ("llm reply unparsable",))
            else:
                out[i] = Verdict(ans, self.llm.name, () if ans else ("llm: INVALID",))
        return out


JudgeFactory = Callable[[Backend | None], Judge]
JUDGES: Registry[JudgeFactory] = Registry("judge")
JUDGES.register("rules")(lambda backend: RulesJudge())
JUDGES.register("rules_no_topic")(lambda backend: RulesJudge(topic=False))


@JUDGES.register("llm")
def _llm(backend: Backend | None) -> Judge:
    if backend is None:
        raise ValueError("judge 'llm' needs a backend (--judge BACKEND:MODEL)")
    return LLMJudge(backend)


@JUDGES.register("combined")
def _combined(backend: Backend | None) -> Judge:
    if backend is None:
        raise ValueError("judge 'combined' needs a backend (--judge BACKEND:MODEL)")
    return CombinedJudge(LLMJudge(backend))


def parse_judge_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``KIND`` | ``BACKEND:MODEL`` | ``KIND=BACKEND:MODEL`` -> (judge kind, backend, model).
    A bare backend spec means the combined judge, the offline default's kind."""
    kind, _, rest = spec.partition("=") if "=" in spec else ("", "", spec)
    if not rest or (rest in JUDGES and not kind):
        return (rest or kind), None, None
    backend, _, model = rest.partition(":")
    return (kind or "combined"), backend, (model or None)


def make_judge(spec: str | None, base_url: str | None = None) -> Judge:
    """``--judge`` as a judge; the offline default is the embedded model AND the deterministic
    rules (``combined``). A backend that places a model (``hf``: it takes a ``device``) gets
    this process's device (``ranks.device()``: cuda:LOCAL_RANK): its "auto" is every
    process's cuda:0, where each rank's copy of a large judge ran the first GPU out of memory
    at start."""
    import inspect

    from trainers.cppo_pipeline import ranks
    from trainers.harness import BACKENDS

    kind, backend_name, model = parse_judge_spec(spec or "combined=hf:")
    backend = None
    if backend_name is not None:
        factory = BACKENDS.get(backend_name)
        options: dict[str, object] = {"base_url": base_url} if base_url else {}
        if "device" in inspect.signature(factory).parameters:
            options["device"] = ranks.device()
        backend = factory(model, **options)
    return JUDGES.get(kind)(backend)
