"""PlanSearch's stages as pure functions: the observation tree, candidate combos, selection.

The released PlanSearch implementation (github.com/scaleapi/plansearch,
search/combo_observation_model.py; defaults in its README) runs, per problem:

1. first observations: one request for `num-observations-to-generate` (10) observations,
   then follow-up turns in the same conversation that list them, keep the most useful and
   format them as a list;
2. derived observations: every subset of at most `max-observation-k` (2) observations of
   the layer above, the empty subset included, gets its own request for new observations
   derived from it (same follow-up turns); `num-observation-layers` (2) layers in all;
3. a natural-language solution sketch for every distinct observation subset of the tree;
4. a critique of each sketch and, in the same conversation, its fix: original and fixed
   sketch are both candidates;
5. pseudocode for a sketch, then code from the pseudocode;
6. the programs of all candidates are shuffled and the first ones returned.

cppo_bench.methods.plansearch runs these stages under the study's budget (8 candidate
plans, K solver attempts); the deviations are options named in its docstring.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cppo_bench.plan.contract import parse_labelled, validate_plans

Combo = tuple[str, ...]
NO_OBSERVATIONS = "(none: this problem needs no particular observation)"
# (the line's lead-in never crosses a line: "^\W*" would rescan a blank run from each line)
_CLAIM = re.compile(r"^[^\w\n]*claim[^\w\n]*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


@dataclass
class ObservationNode:
    """A node of the observation tree: the observation subset it stands for (its parent's
    combo), the observations derived from it once expanded, and its children."""

    combo: Combo
    layer: int
    derived: list[str] | None = None
    children: list[ObservationNode] = field(default_factory=list)


def parse_observations(text: str) -> list[str]:
    """Observations of a stage-1/2 reply or of a filter turn: the "Claim:" line of each
    "Observation N:" section, else the section's last non-empty line (a filter turn writes
    one-line sections). Empty and repeated observations are dropped."""
    out: list[str] = []
    for section in parse_labelled(text, "Observation"):
        claims = _CLAIM.findall(section)
        lines = [ln.strip() for ln in section.splitlines() if ln.strip()]
        obs = (claims[-1] if claims else (lines[-1] if lines else "")).strip()
        if obs and obs not in out:
            out.append(obs)
    return out


def observation_combos(observations: Sequence[str], max_subset: int) -> list[Combo]:
    """Every subset of at most `max_subset` observations, the empty one first (the released
    code enumerates sizes 0..max_subset; 10 observations and size <= 2 give 56 subsets)."""
    top = min(max_subset, len(observations))
    return [c for size in range(top + 1) for c in itertools.combinations(observations, size)]


def n_combos(m: int, max_subset: int) -> int:
    """How many subsets `observation_combos` gives for m observations."""
    return sum(math.comb(m, s) for s in range(min(max_subset, m) + 1))


# observation-tree requests a problem (before filter turns) the options may plan for: the
# released defaults ask for 57 (1 + 56), three layers of them 3,193
MAX_TREE_REQUESTS = 10_000


def tree_requests(n_observations: int, max_subset: int, layers: int) -> int:
    """The most observation requests one problem's tree can make: a node's reply keeps at
    most n_observations, so a node has at most n_combos(...) children."""
    children = n_combos(n_observations, max_subset)
    total, width = 0, 1
    for _ in range(layers):
        total += width
        width *= children
        if total > MAX_TREE_REQUESTS:
            break  # past the cap already (and the next power may be astronomically large)
    return total


def expand(node: ObservationNode, derived: list[str], max_subset: int) -> None:
    """Attach a node's derived observations and one child per subset of them."""
    node.derived = derived
    node.children = [
        ObservationNode(c, node.layer + 1) for c in observation_combos(derived, max_subset)
    ]


def frontier(root: ObservationNode) -> list[ObservationNode]:
    """The unexpanded nodes of the deepest layer (the next layer's requests)."""
    if root.derived is None:
        return [root]
    return [leaf for child in root.children for leaf in frontier(child)]


def tree_combos(root: ObservationNode) -> list[Combo]:
    """Every distinct observation subset in the tree, breadth first (root's empty subset
    first): the inputs of the sketch stage."""
    seen: dict[Combo, None] = {}
    layer = [root]
    while layer:
        for node in layer:
            seen.setdefault(node.combo, None)
        layer = [c for node in layer for c in node.children]
    return list(seen)


def pick_combos(pool: Sequence[Combo], n: int, rng: random.Random) -> list[Combo]:
    """n subsets for the sketch stage: the released code sketches every subset and shuffles
    the results, so a uniform draw without replacement is the same distribution at a budget
    of n; a pool smaller than n is cycled (each repeat is sampled with its own seed)."""
    if not pool or n <= 0:
        return []
    order = list(pool)
    rng.shuffle(order)
    return [order[i % len(order)] for i in range(n)]


def select_shuffle(n: int, k: int, rng: random.Random) -> list[int]:
    """The released selection: shuffle the candidates, take the first k (cycling when k
    exceeds the number of candidates)."""
    if n == 0:
        return []
    order = list(range(n))
    rng.shuffle(order)
    return [order[i % n] for i in range(k)]


def _words(plan: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", plan.lower()))


def select_spread(candidates: Sequence[str | None], k: int) -> list[int]:
    """This toolkit's earlier heuristic (option select=spread): drop unparsed, empty and
    literal-duplicate candidates, start from the first survivor, then repeatedly add the one
    whose smallest word-Jaccard distance to those chosen is largest (ties: lowest index);
    fewer than k survivors are cycled."""
    parsed = [(i, c) for i, c in enumerate(candidates) if c and c.strip()]
    report = validate_plans([c for _, c in parsed], len(parsed), max_words=10**9)
    dup = {later for _, later in report.duplicates}
    pool = [pc for j, pc in enumerate(parsed) if j not in dup]
    if not pool:
        return []
    chosen, rest = [pool[0]], pool[1:]
    while rest and len(chosen) < k:

        def spread(item: tuple[int, str]) -> float:
            w = _words(item[1])
            return min(1 - len(w & _words(c)) / max(1, len(w | _words(c))) for _, c in chosen)

        best = max(rest, key=lambda item: (spread(item), -item[0]))
        chosen.append(best)
        rest.remove(best)
    picked = [i for i, _ in chosen]
    return [picked[i % len(picked)] for i in range(k)]


def format_observations(observations: Sequence[str]) -> str:
    """Observations as a bullet list for the derived and sketch prompts."""
    return "\n".join(f"- {o}" for o in observations) if observations else NO_OBSERVATIONS
