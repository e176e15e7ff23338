"""A synthetic run store with planted per-problem outcomes, for the report tests.

Written through cppo_bench.store.runs (manifests and records.jsonl, as `cppo-bench run` writes
them): two models, four benchmarks, trained rows with three training seeds, inference-only
rows, a k=16 run for the K sweep, plan tuples with planted duplicate counts and a planted
D_surf (members sharing no token: 1.0; identical members: 0.0), and answer-prediction runs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cppo_bench.store.runs import (
    Branch,
    ProblemRecord,
    RunManifest,
    append_record,
    run_dir_for,
    write_manifest,
)

N = 24  # problems per run
MODELS = ("org/ModelA", "org/ModelB")
DEFAULTS = {"inference": "joint", "select": "first"}  # options a manifest may leave out
LABEL = "42"


@dataclass
class Plant:
    method: str
    model: str
    bench: str
    seed: int
    outcomes: list[list[bool]]
    k: int = 4
    trained: str | None = None
    options: dict = field(default_factory=dict)
    diversity: float | None = None  # planted D_surf: plans (or programs) disjoint 1.0, same 0.0
    plans: bool = False
    dups: list[int] | None = None
    planner: list[int] = field(default_factory=list)
    solver: list[int] = field(default_factory=list)
    answers: list[list[str]] | None = None


def _texts(kind: float, k: int, i: int) -> list[str]:
    if kind == 1.0:  # no token shared between members: Self-BLEU 0, D_surf 1
        return [" ".join(f"w{j}t{t}p{i}" for t in range(6)) for j in range(k)]
    return ["use a greedy sweep over the sorted events"] * k  # identical: D_surf 0


def _write(root: Path, p: Plant) -> None:
    extra = {"trained": p.trained, "base_model": p.model, "train_seed": p.seed} if p.trained else {}
    model = f"ckpt/{p.trained}-{p.model[-1]}-s{p.seed}" if p.trained else p.model
    man = RunManifest(
        method=p.method,
        bench=p.bench,
        model=model,
        backend="hf",
        k=p.k,
        seed=p.seed,
        sampling={"temperature": 0.7},
        method_options=dict(p.options),
        data_source="planted",
        problem_ids=[f"q{i}" for i in range(N)],
        problem_ids_hash="planted",
        package_version="0",
        git_commit=None,
        created_at="2026-01-01T00:00:00",
        status="complete",
        extra=extra,
    )
    run_dir = run_dir_for(root, man)
    write_manifest(run_dir, man, root=root)
    for i in range(N):
        texts = _texts(p.diversity, p.k, i) if p.diversity is not None else [""] * p.k
        branches = [
            Branch(
                index=j,
                code="" if p.plans else texts[j],
                completion="",
                verdict="AC",
                passed=p.outcomes[i][j],
                solver_tokens=0,
                tuple_index=j // 4,
                answer=p.answers[i][j] if p.answers else None,
            )
            for j in range(p.k)
        ]
        append_record(
            run_dir,
            root=root,
            record=ProblemRecord(
                problem_id=f"q{i}",
                branches=branches,
                planner_tokens=p.planner[i],
                solver_tokens=p.solver[i],
                plans=[texts[t : t + 4] for t in range(0, p.k, 4)] if p.plans else [],
                plan_validity=[
                    {"k": 4, "count": 4, "n_duplicates": (p.dups or [])[i], "duplicates": []}
                ]
                if p.plans
                else [],
                label=LABEL if p.answers else None,
            ),
        )


def plant(root: Path) -> list[Plant]:
    rng = np.random.default_rng(11)
    plants: list[Plant] = []

    def outcomes(prob: float, k: int = 4) -> list[list[bool]]:
        return (rng.random((N, k)) < prob).tolist()

    def add(method, model, bench, seed, outs, **kw) -> Plant:
        plan = Plant(method, model, bench, seed, outs, **kw)
        plan.planner = rng.integers(40, 160, N).tolist() if plan.plans else [0] * N
        plan.solver = rng.integers(200, 900, N).tolist()
        if plan.plans:
            plan.dups = rng.integers(0, 3, N).tolist()
        plants.append(plan)
        return plan

    cppo_joint = {"inference": "joint"}
    for model in MODELS:
        for bench in ("apps", "lcb"):
            a_apps = model == MODELS[0] and bench == "apps"
            b_apps = model == MODELS[1] and bench == "apps"
            for s in range(3):
                add("direct", model, bench, s, outcomes(0.03), diversity=0.0)
                pk = add("direct", model, bench, s, outcomes(0.1), trained="pkpo", diversity=0.0)
                # A/apps: CPPO far above every baseline (dagger). A/lcb: CPPO repeats PKPO,
                # the strongest baseline, while far above Direct (no dagger: the strongest
                # counts). B: CPPO equals PKPO (no dagger).
                outs = outcomes(0.9) if a_apps else [list(o) for o in pk.outcomes]
                add(
                    "cppo",
                    model,
                    bench,
                    s,
                    outs,
                    trained="cppo",
                    options=cppo_joint,
                    diversity=1.0,
                    plans=True,
                )
                add(
                    "cppo",
                    model,
                    bench,
                    s,
                    outcomes(0.2),
                    trained="cppo",
                    options={"inference": "iid"},
                    diversity=0.0,
                    plans=True,
                )
            # untrained CPPO: far above all baselines only on B/apps
            add(
                "cppo",
                model,
                bench,
                0,
                outcomes(0.95 if b_apps else 0.05),
                options=cppo_joint,
                diversity=1.0,
                plans=True,
            )
            add(
                "cppo",
                model,
                bench,
                0,
                outcomes(0.1),
                options={"inference": "iid"},
                diversity=0.0,
                plans=True,
            )
            add("plan_and_solve", model, bench, 0, outcomes(0.05), diversity=1.0)
            add("direct", model, bench, 0, outcomes(0.03, 16), k=16, diversity=0.0)
    # answer prediction (maj@4): untrained CPPO always answers the label, Direct rarely
    good = [[LABEL] * 4 for _ in range(N)]
    bad = [
        [random.Random(i * 4 + j).choice([LABEL, "41", "40", "39", "7", "0"]) for j in range(4)]
        for i in range(N)
    ]
    for answers, method, opts in ((good, "cppo", cppo_joint), (bad, "direct", {})):
        add(
            method,
            MODELS[0],
            "lcb_execution",
            0,
            [[a == LABEL for a in row] for row in answers],
            options=opts,
            answers=answers,
            plans=method == "cppo",
            diversity=1.0 if method == "cppo" else 0.0,
        )
    for p in plants:
        _write(root, p)
    return plants
