"""What a planning method sent and received per stage, for `cppo-bench samples`.

A run stores each stage's outputs (the raw planner text in ``record.extra``, the parsed plans,
each branch's plan and completion); the prompts are re-rendered from the run's prompt version
and options exactly as the method built them (the same `render` calls). One view per method,
registered by name (``STAGE_VIEWS``); a method without one shows its attempts only.

A view returns (stages, per-branch solver prompts, per-branch "plan was filled" flags):
``stages`` is a list of {"stage", "prompt" (chat messages or None), "received" (texts)}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cppo_bench.problem import Problem
from cppo_bench.store.runs import ProblemRecord
from cppo_bench.util.registry import Registry

Messages = list[dict[str, str]]
View = Callable[[Any, Problem | None, ProblemRecord], tuple[list[dict], list[Any], list[bool]]]
STAGE_VIEWS: Registry[View] = Registry("samples stage view")


def _version(manifest: Any) -> str:
    from cppo_bench.prompts import DEFAULT_VERSION

    return str(manifest.method_options.get("prompt_version") or DEFAULT_VERSION)


def _render(name: str, problem: Problem | None, version: str, **values: Any) -> Messages | None:
    """The prompt as the method rendered it; None without the problem (data not at hand)
    or for a prompt version this install lacks."""
    from cppo_bench.prompts import render

    if problem is None:
        return None
    try:
        return [dict(m) for m in render(name, problem, version, **values)]
    except Exception:  # noqa: BLE001 - a version or prompt this install lacks
        return None


def _texts(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _filled_indices(validity: Any) -> list[int]:
    got = validity.get("filled") if isinstance(validity, dict) else None
    return [int(i) for i in got if isinstance(i, int)] if isinstance(got, list) else []


@STAGE_VIEWS.register("cppo")
def _cppo(manifest: Any, problem: Problem | None, rec: ProblemRecord) -> Any:
    opts, version = manifest.method_options, _version(manifest)
    size = int(opts.get("tuple_size", 4) or 4)
    joint = opts.get("inference", "joint") == "joint"
    planner = _render("plan", problem, version, n=size, n_next=size + 1 if joint else 2)
    stages = [{"stage": "planner", "prompt": planner,
               "received": _texts(rec.extra.get("planner_completions"))}]  # fmt: skip
    # which tuple slot each branch took: joint runs record it per tuple (extra.selected)
    selected = rec.extra.get("selected") if joint else None
    slots: list[tuple[int, int]] = []
    if isinstance(selected, list):
        slots = [
            (t, int(i)) for t, idx in enumerate(selected) if isinstance(idx, list) for i in idx
        ]
    else:
        slots = [(0, i) for i in range(len(rec.branches))]
    filled = [set(_filled_indices(v)) for v in rec.plan_validity]
    flags = [
        bool(j < len(slots) and slots[j][0] < len(filled) and slots[j][1] in filled[slots[j][0]])
        for j in range(len(rec.branches))
    ]  # fmt: skip
    prompts = [_render("solve", problem, version, plan=b.plan) if b.plan else None
               for b in rec.branches]  # fmt: skip
    return stages, prompts, flags


@STAGE_VIEWS.register("plan_and_solve")
def _plan_and_solve(manifest: Any, problem: Problem | None, rec: ProblemRecord) -> Any:
    # one prompt writes the plan and the program: what was received is each completion
    prompt = _render("plan_and_solve", problem, _version(manifest))
    return [], [prompt] * len(rec.branches), [False] * len(rec.branches)


@STAGE_VIEWS.register("plansearch")
def _plansearch(manifest: Any, problem: Problem | None, rec: ProblemRecord) -> Any:
    x = rec.extra
    stages = [
        {"stage": name, "prompt": None, "received": _texts(x.get(key))}
        for name, key in (
            ("observations", "observations"),
            ("sketches", "candidates"),
            ("pseudocode", "pseudocode"),
        )  # fmt: skip
        if x.get(key)
    ]
    # the solver read the branch's pseudocode when there is one, else its sketch
    pseudo = _texts(x.get("pseudocode"))
    version = _version(manifest)
    prompts = [
        _render("solve", problem, version, plan=pseudo[i] if i < len(pseudo) else b.plan)
        if (i < len(pseudo) or b.plan) else None
        for i, b in enumerate(rec.branches)
    ]  # fmt: skip
    filled = set(_filled_indices(rec.plan_validity[0])) if rec.plan_validity else set()
    return stages, prompts, [i in filled for i in range(len(rec.branches))]


def stage_view(manifest: Any, problem: Problem | None, rec: ProblemRecord) -> Any:
    """(stages, per-branch solver prompts, per-branch filled flags) of a record; a method
    without a view: no stages, no per-branch prompt, nothing filled."""
    if manifest.method not in STAGE_VIEWS:
        n = len(rec.branches)
        return [], [None] * n, [False] * n
    return STAGE_VIEWS.get(manifest.method)(manifest, problem, rec)
