"""The training set: loaded through the harness's loaders, decontaminated, then streamed.

Hygiene before any step: the training problems are compared with every evaluation set the
user names (``--eval BENCH[=PATH]``; default ``demo`` plus every other benchmark that loads
offline) by the harness's decontamination index, and the overlapping ones are removed and
listed in the manifest. ``allow_overlap`` keeps them (and still lists them).

The stream is stateless: step s takes problems [s*P, (s+1)*P) of the concatenation of
per-epoch permutations (each seeded by the run seed and the epoch), so the data cursor of a
checkpoint is just the step number and a resumed run sees exactly the same problems.

A step never holds a problem twice. A step that straddles an epoch boundary ends epoch e with
some problems and begins epoch e + 1 with others; a plain reshuffle could deal the same problem
to both halves (measured: 8 of 188 steps with 50 problems and P = 8), and with per-request seeds
the two copies would be identical samples (CPPO then crashed merging them by problem id; PKPO,
pass@K-RL and UpSkill silently formed one group of 2n duplicates). So epoch e + 1's permutation
moves the problems of that step's epoch-e half behind its own half of the step (a stable
partition: still a permutation, each problem still once per epoch). This needs at least P
problems; fewer is refused in one line.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.harness import (
    BENCHMARKS,
    DataError,
    Problem,
    Source,
    decontaminate,
    load_benchmark,
    load_source,
    quote,
)

DEFAULT_TRAIN = "demo_train"
DEFAULT_EVAL = ("demo",)
# benchmarks probed for "whatever else is local" (each is skipped when it cannot load offline)
LOCAL_PROBES = ("apps", "codecontests", "lcb")


@dataclass
class TrainingSet:
    problems: list[Problem]
    source: str
    removed: list[dict[str, Any]] = field(default_factory=list)
    eval_sets: list[str] = field(default_factory=list)
    skipped_eval: list[str] = field(default_factory=list)  # named but not loadable (why)

    @property
    def ids_hash(self) -> str:
        """SHA-256 of the sorted problem uids: which problems this run trained on."""
        return hashlib.sha256("\n".join(sorted(p.uid for p in self.problems)).encode()).hexdigest()


def load_training(
    bench: str,
    data: str | None,
    split: str | None = None,
    echo: Callable[[str], None] | None = None,
) -> tuple[list[Problem], str]:
    """The training problems of ``bench`` (its train split where it has one); ``echo`` gets
    the one line of what was read, kept and dropped, and why."""
    if bench not in BENCHMARKS:
        raise DataError(f"unknown benchmark {quote(bench)}; known: {', '.join(BENCHMARKS.names())}")
    # a benchmark with splits trains on its "train" split unless told otherwise
    if split is None and BENCHMARKS.get(bench).default_split is not None:
        split = "train"
    options: dict[str, Any] = {"split": split} if split else {}
    result = load_benchmark(bench, data=data, **options)
    problems = [p for p in result.problems if p.task == "codegen" and p.tests]
    if echo is not None:
        from trainers.harness import load_line

        left = len(result.problems) - len(problems)
        extra = {"not code generation with tests": left} if left else {}
        echo(load_line(f"training set {bench}", result, kept=len(problems), extra=extra))
    if not problems:
        raise DataError(f"training set {bench} ({result.source or data}): no codegen problems")
    return problems, result.source or bench


def _eval_sources(specs: list[str]) -> tuple[list[Source], list[str], list[str]]:
    sources, names, skipped = [], [], []
    for spec in specs:
        try:
            source, _ = load_source(spec, "eval")
        except (DataError, OSError) as exc:
            skipped.append(f"{spec} ({str(exc).splitlines()[0][:120]})")
            continue
        sources.append(source)
        names.append(spec)
    return sources, names, skipped


def _hub_cached(hub_id: str | None) -> bool:
    """Whether a hub dataset is already in the local Hugging Face cache (never downloads)."""
    if not hub_id:
        return False
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return (Path(constants.HF_HUB_CACHE) / f"datasets--{hub_id.replace('/', '--')}").is_dir()


def default_eval_specs() -> list[str]:
    """demo, plus every evaluation benchmark whose hub dataset is already cached locally:
    decontaminating a training run must not download gigabytes of evaluation data."""
    return [*DEFAULT_EVAL, *(b for b in LOCAL_PROBES if _hub_cached(BENCHMARKS.get(b).hub_id))]


def decontaminated(
    problems: list[Problem], source: str, eval_specs: list[str] | None, allow_overlap: bool
) -> TrainingSet:
    """The training set minus every problem matching an evaluation problem (unless allowed)."""
    explicit = bool(eval_specs)
    specs = list(eval_specs) if eval_specs else default_eval_specs()
    sources, names, skipped = _eval_sources(specs)
    if explicit and skipped:
        raise DataError(f"--eval {skipped[0]}: cannot be loaded for decontamination")
    train = Source("train", "train", problems, origin=source)
    result = decontaminate([train, *sources])
    removed = [
        {"uid": r.uid, "matches": [m["eval_uid"] for m in r.matches]} for r in result.removed
    ]
    kept = problems if allow_overlap else result.filtered_train
    if not kept:
        raise DataError(
            "every training problem overlaps an evaluation set; pass --allow-overlap to train "
            "on them anyway"
        )
    return TrainingSet(kept, source, removed, names, skipped)


def step_problems(problems: list[Problem], step: int, per_step: int, seed: int) -> list[Problem]:
    """The problems of global step ``step`` (0-based) in the seeded epoch-permutation stream:
    ``per_step`` distinct problems."""
    n = len(problems)
    if per_step > n:
        raise DataError(
            f"config prompts_per_step: {per_step} exceeds the {n} training problems (a step "
            "would hold a problem twice)"
        )
    out = []
    for pos in range(step * per_step, (step + 1) * per_step):
        epoch, offset = divmod(pos, n)
        out.append(problems[_epoch_order(n, per_step, str(seed), epoch)[offset]])
    return out


# (n, per_step, seed) -> the last two epochs' orders: steps walk forward, so each new epoch
# costs one shuffle; a jump backwards (a resume) recomputes from epoch 0, without recursion
_ORDERS: dict[tuple[int, int, str], dict[int, tuple[int, ...]]] = {}


def _epoch_order(n: int, per_step: int, seed: str, epoch: int) -> tuple[int, ...]:
    known = _ORDERS.setdefault((n, per_step, seed), {})
    if epoch in known:
        return known[epoch]
    last = max((e for e in known if e < epoch), default=-1)
    order = known.get(last)
    for e in range(last + 1, epoch + 1):
        order = _next_order(n, per_step, seed, e, order)
        known[e] = order
        for old in [k for k in known if k < e - 1]:
            del known[old]
    assert order is not None
    return order


def _next_order(
    n: int, per_step: int, seed: str, epoch: int, previous: tuple[int, ...] | None
) -> tuple[int, ...]:
    # the seeded shuffle of ``epoch``, with the problems its first step shares with the end of
    # the previous epoch moved behind that step (a stable partition)
    order = list(range(n))
    random.Random(f"{seed}:epoch{epoch}").shuffle(order)
    tail = (epoch * n) % per_step  # draws of the boundary step that come from epoch - 1
    if previous is None or tail == 0:
        return tuple(order)
    taken = set(previous[n - tail :])
    head = [i for i in order if i not in taken][: per_step - tail]
    chosen = set(head)
    return tuple(head + [i for i in order if i not in chosen])


def steps_for(n_problems: int, per_step: int, epochs: int, max_steps: int) -> int:
    total = max(1, -(-n_problems * epochs // per_step))  # ceil: the last step may wrap
    return min(total, max_steps) if max_steps else total


def epoch_of(step: int, per_step: int, n_problems: int) -> float:
    return (step + 1) * per_step / n_problems
