"""PlanSearch under the K solver-attempt budget, following the released implementation.

The stages and counts are those of the released code (github.com/scaleapi/plansearch,
search/combo_observation_model.py; summarised in plansearch_stages.py), with the study's
budget where the two differ: 8 candidate plans per problem and K solver attempts. Per
problem, each stage one batched backend call over all problems:

1. observations: one request for `n_observations` (10) observations; with
   `filter_observations` a follow-up turn keeps the most useful ones;
2. derived observations, `observation_layers` - 1 (1) more layers: one request (plus its
   filter turn) per subset of at most `max_subset` (2) observations of the layer above,
   the empty subset included: 1 + m + m(m-1)/2 requests for m observations;
3. sketches: ceil(n_candidates / 2) distinct observation subsets of the tree, drawn at
   random (the released code sketches all and shuffles), each gets a natural-language
   solution sketch;
4. with `fix_sketches`: a critique of each sketch and, in the same conversation, a fix;
   sketch and fix are both candidates, so n_candidates (8) candidate plans in all;
5. selection: K candidates by `select` (shuffle: the released random pick);
6. with `pseudocode`: pseudocode for each selected plan;
7. the frozen solver (the SOLVE prompt every planning method shares) writes one program
   per selected plan from its pseudocode: exactly K solver attempts.

Stages 1-6 count as planner tokens, stage 7 as solver tokens. Where this toolkit departs
from the released code (each a named option, `-m KEY=VAL`):

* n_candidates=8 and K solver attempts (the study) instead of a program for every
  subset of the tree; hence the random draw of subsets in stage 3;
* the released list / filter / parse-into-Python follow-up turns are one filter turn that
  writes labelled lines (`filter_observations=false` skips it and parses stage 1/2 replies
  directly);
* pseudocode is written only for the K selected plans (the released code writes it for
  every candidate, then picks programs at random: the same distribution);
* select=spread: this toolkit's earlier word-distance heuristic instead of the shuffle;
* a reply's observations past the `n_observations` asked for are dropped (the released code
  keeps what the model wrote): the tree's size is then the options', never the model's
  (a model that writes 300 observations would ask for 45,000 derived requests), and options
  whose tree passes MAX_TREE_REQUESTS a problem are refused in one line.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cppo_bench.backends.base import Backend, GenRequest
from cppo_bench.methods.base import (
    Method,
    MethodOptions,
    MethodOutput,
    RunContext,
    branch_attempts,
    follow_up,
    generate,
    prompt_request,
)
from cppo_bench.methods.plansearch_stages import (
    MAX_TREE_REQUESTS,
    ObservationNode,
    expand,
    format_observations,
    frontier,
    parse_observations,
    pick_combos,
    select_shuffle,
    select_spread,
    tree_combos,
    tree_requests,
)
from cppo_bench.plan.contract import fill_plans, validate_plans
from cppo_bench.problem import Problem


@dataclass(frozen=True)
class PlanSearchOptions(MethodOptions):
    n_observations: int = 10  # released num-observations-to-generate
    max_subset: int = 2  # released max-observation-k
    observation_layers: int = 2  # released num-observation-layers
    filter_observations: bool = True
    fix_sketches: bool = True  # released "fix idea" step (critique, then fix)
    pseudocode: bool = True  # released pseudocode step
    n_candidates: int = 8  # the study's candidate plans per problem
    select: Literal["shuffle", "spread"] = "shuffle"
    planner_max_tokens: int = 0  # cap on every planning call; 0: the run's max_tokens

    def __post_init__(self) -> None:
        if self.prompt_version == "v1":  # v1 has the earlier pipeline's prompts only
            raise ValueError("plansearch needs prompt_version v2 or later")
        self.require_at_least(1, "n_observations", "observation_layers", "n_candidates")
        self.require_at_least(0, "max_subset", "planner_max_tokens")
        n = tree_requests(self.n_observations, self.max_subset, self.observation_layers)
        if n > MAX_TREE_REQUESTS:
            raise ValueError(
                f"n_observations {self.n_observations}, max_subset {self.max_subset} and "
                f"observation_layers {self.observation_layers} plan {n:,} or more observation "
                f"requests a problem, past {MAX_TREE_REQUESTS:,}"
            )


class PlanSearch(Method):
    name = "plansearch"
    options_type = PlanSearchOptions

    @classmethod
    def passk_rule(cls, options: Mapping[str, Any]) -> tuple[str, str]:
        # select=shuffle (a random order of candidates) gives exchangeable attempts; spread
        # orders them by its heuristic, so a k-attempt run gets the first k
        if options.get("select", "shuffle") == "spread":
            return ("first", "first")
        return ("unbiased", "first")

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        o = self.options
        assert isinstance(o, PlanSearchOptions)
        cap = o.planner_max_tokens or None
        tokens = [0] * len(problems)
        # per problem: how often a stage fell back (counted in record.extra["fallbacks"])
        fallbacks: list[Counter[str]] = [Counter() for _ in problems]

        def ask(reqs: list[GenRequest], owners: list[int]) -> list[str]:
            results = generate(backend, reqs)
            for j, r in zip(owners, results, strict=True):
                tokens[j] += r.num_tokens
            return [r.text for r in results]

        def req(name: str, j: int, role: str, i: int, **values: object) -> GenRequest:
            p = problems[j] if "history" not in values else None
            seed = ctx.seed_for(problems[j], role, i)
            return prompt_request(name, p, ctx, seed, tag="planner", max_tokens=cap, **values)  # type: ignore[arg-type]

        # stages 1-2: the observation tree, one layer per round
        roots = [ObservationNode((), 0) for _ in problems]
        for layer in range(o.observation_layers):
            nodes = [(j, i, n) for j, r in enumerate(roots) for i, n in enumerate(frontier(r))]
            owners = [j for j, _, _ in nodes]
            reqs = [
                req("plansearch_observations", j, "ps-obs", i, n=o.n_observations)
                if layer == 0
                else req(
                    "plansearch_derived",
                    j,
                    f"ps-derived-{layer}",
                    i,
                    observations=format_observations(node.combo),
                )
                for j, i, node in nodes
            ]
            texts = ask(reqs, owners)
            if o.filter_observations:
                reqs = [
                    req("plansearch_filter", j, f"ps-filter-{layer}", i, history=follow_up(r, t))
                    for (j, i, _), r, t in zip(nodes, reqs, texts, strict=True)
                ]
                texts = ask(reqs, owners)
            for (j, _, node), text in zip(nodes, texts, strict=True):
                parsed = parse_observations(text)[: o.n_observations]
                if not parsed:  # the stage falls back to "no observation" for this node
                    fallbacks[j]["plansearch_no_observations"] += 1
                expand(node, parsed, o.max_subset)

        # stage 3: sketches on subsets drawn from the whole tree
        per_combo = 2 if o.fix_sketches else 1
        n_sketch = math.ceil(o.n_candidates / per_combo)
        combos = [
            pick_combos(tree_combos(root), n_sketch, random.Random(ctx.seed_for(p, "ps-combos", 0)))
            for p, root in zip(problems, roots, strict=True)
        ]
        jobs = [(j, c, combo) for j, cs in enumerate(combos) for c, combo in enumerate(cs)]
        owners = [j for j, _, _ in jobs]
        sketches = ask(
            [
                req("plansearch_sketch", j, "ps-sketch", c, observations=format_observations(cb))
                for j, c, cb in jobs
            ],
            owners,
        )
        # stage 4: critique each sketch, then fix it in the same conversation
        fixes: list[str | None] = [None] * len(jobs)
        if o.fix_sketches:
            crit = [
                req("plansearch_critique", j, "ps-critique", c, sketch=s)
                for (j, c, _), s in zip(jobs, sketches, strict=True)
            ]
            critiques = ask(crit, owners)
            fixes = list(
                ask(
                    [
                        req("plansearch_fix", j, "ps-fix", c, history=follow_up(r, t))
                        for (j, c, _), r, t in zip(jobs, crit, critiques, strict=True)
                    ],
                    owners,
                )
            )
        candidates: list[list[str]] = [[] for _ in problems]
        for (j, _, _), sketch, fix in zip(jobs, sketches, fixes, strict=True):
            candidates[j] += [sketch.strip()] + ([fix.strip()] if fix is not None else [])
        for j, cands in enumerate(candidates):
            empty = sum(not c for c in cands[: o.n_candidates])
            if empty:
                fallbacks[j]["plansearch_empty_candidates"] += empty
        candidates = [c[: o.n_candidates] for c in candidates]

        # stage 5: K of the candidates
        outputs, chosen = [], []
        for j, p in enumerate(problems):
            outputs.append(self._select(p, ctx, candidates[j], combos[j], roots[j]))
            chosen.append(outputs[-1].plans[0])
            if fallbacks[j]:
                outputs[-1].extra["fallbacks"] = dict(fallbacks[j])

        # stage 6: pseudocode for each selected plan
        solver_input = chosen
        if o.pseudocode:
            branches = [(j, b) for j in range(len(problems)) for b in range(ctx.k)]
            codes = ask(
                [
                    req("plansearch_pseudocode", j, "ps-pseudo", b, sketch=chosen[j][b])
                    for j, b in branches
                ],
                [j for j, _ in branches],
            )
            solver_input = [codes[j * ctx.k : (j + 1) * ctx.k] for j in range(len(problems))]
            for out, pseudo in zip(outputs, solver_input, strict=True):
                out.extra["pseudocode"] = pseudo

        # stage 7: the shared solver, K attempts
        groups = branch_attempts(backend, problems, ctx, "solve", "solve", plans=solver_input)
        for out, attempts, plans, tok in zip(outputs, groups, chosen, tokens, strict=True):
            for a, plan in zip(attempts, plans, strict=True):
                a.plan = plan  # the branch's plan; the solver read its pseudocode
            out.attempts, out.planner_tokens = attempts, tok
        return outputs

    def _select(
        self,
        p: Problem,
        ctx: RunContext,
        candidates: list[str],
        combos: list[tuple[str, ...]],
        root: ObservationNode,
    ) -> MethodOutput:
        o = self.options
        assert isinstance(o, PlanSearchOptions)
        if o.select == "shuffle":
            rng = random.Random(ctx.seed_for(p, "ps-select", 0))
            picked = [i for i in select_shuffle(len(candidates), ctx.k, rng) if candidates[i]]
        else:
            picked = select_spread(candidates, ctx.k)
        got = [candidates[i] for i in picked]
        # sketches are editorials: the PLAN contract's word limit does not apply to them
        report = validate_plans(got, ctx.k, parse_mode="selected", problem=p, max_words=10**9)
        plans, filled = fill_plans(got, ctx.k, "cycle")
        if filled:
            report.filled, report.fill_rule = filled, "cycle"
        out = MethodOutput(p.problem_id, [], plans=[plans])
        out.plan_validity.append(report.to_dict())
        out.extra.update(
            observations=list(root.derived or []),
            derived=[list(c.derived or []) for c in root.children],
            sketched_subsets=[list(c) for c in combos],
            candidates=candidates,
            selected=picked,
        )
        return out
