"""The training set: loaded through the harness's loaders, decontaminated, then streamed.

Hygiene before any step: the training problems are compared with every evaluation set the
user names (``--eval BENCH[=PATH]``; default ``demo`` plus every other benchmark that loads
offline) by the harness's decontamination index, and the overlapping ones are removed and
listed in the manifest. ``allow_overlap`` keeps them (and still lists them).

The stream is stateless: step s takes problems [s*P, (s+1)*P) of the concatenation of
per-epoch permutations (each seeded by the run seed and the epoch), so the data cursor of a
checkpoint is just the step number and a resumed run sees exactly the same problems.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.decontam import Source, decontaminate
from cppo_bench.decontam.sources import load_source
from cppo_bench.problem import DataError, Problem

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


def load_training(bench: str, data: str | None, split: str | None = None) -> tuple[list[Problem], str]:
    if bench not in BENCHMARKS:
        raise DataError(f"unknown benchmark {bench!r}; known: {', '.join(BENCHMARKS.names())}")
    # a benchmark with splits trains on its "train" split unless told otherwise
    if split is None and BENCHMARKS.get(bench).default_split is not None:
        split = "train"
    options = {"split": split} if split else {}
    result = load_benchmark(bench, data=data, **options)
    problems = [p for p in result.problems if p.task == "codegen" and p.tests]
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


def default_eval_specs() -> list[str]:
    return [*DEFAULT_EVAL, *LOCAL_PROBES]


def decontaminated(
    problems: list[Problem], source: str, eval_specs: list[str] | None, allow_overlap: bool
) -> TrainingSet:
    """The training set minus every problem matching an evaluation problem (unless allowed)."""
    explicit = eval_specs is not None and len(eval_specs) > 0
    specs = list(eval_specs) if explicit else default_eval_specs()
    sources, names, skipped = _eval_sources(specs)
    if explicit and skipped:
        raise DataError(f"--eval {skipped[0]}: cannot be loaded for decontamination")
    skipped = [s for s in skipped if not any(s.startswith(p) for p in LOCAL_PROBES)] or skipped
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
    return TrainingSet(kept, source, removed, names, [s for s in skipped])


def step_problems(problems: list[Problem], step: int, per_step: int, seed: int) -> list[Problem]:
    """The problems of global step ``step`` (0-based) in the seeded epoch-permutation stream."""
    n = len(problems)
    out = []
    for pos in range(step * per_step, (step + 1) * per_step):
        epoch, offset = divmod(pos, n)
        order = list(range(n))
        random.Random(f"{seed}:epoch{epoch}").shuffle(order)
        out.append(problems[order[offset]])
    return out


def steps_for(n_problems: int, per_step: int, epochs: int, max_steps: int) -> int:
    total = max(1, -(-n_problems * epochs // per_step))  # ceil: the last step may wrap
    return min(total, max_steps) if max_steps else total


def epoch_of(step: int, per_step: int, n_problems: int) -> float:
    return (step + 1) * per_step / n_problems
