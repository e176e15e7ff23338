"""The one uncertainty a number carries, named next to it, and its coverage.

The study ("Variance and significance"): trained methods report mean ± std over their
training seeds; inference-only methods vary "over evaluation problems only", which this
toolkit reports as the bootstrap standard error of the mean over problems (several
sampling seeds are averaged per problem first). `stats passk` and `report` both call
`cell_uncertainty`, so the same runs give the same ± in both, with the same label.

The other spread stays available by name (`--spread`):

- ``study`` (default): the rule above;
- ``seed-std``: std over seeds for every method (a one-seed method has none);
- ``bootstrap-se``: the bootstrap SE over problems for every method (seeds averaged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from cppo_bench.metrics.seeds import bootstrap_se
from cppo_bench.util.termsafe import quote

Spread = Literal["study", "seed-std", "bootstrap-se"]
SPREADS: tuple[str, ...] = ("study", "seed-std", "bootstrap-se")
# short tags printed next to a ±: what the number after it is
KIND_TAGS = {"seed_std": "sd over seeds", "bootstrap_se": "bootstrap SE"}


@dataclass(frozen=True)
class Uncertainty:
    mean: float
    spread: float | None  # None: not defined (one seed under seed-std, one problem)
    kind: str  # "seed_std" | "bootstrap_se"
    n_problems: int  # problems the mean is over (shared by every seed)
    n_seeds: int
    n_total: int = 0  # the benchmark's full evaluation set (0: unknown)

    @property
    def over(self) -> str:
        return "seeds" if self.kind == "seed_std" else "problems"

    @property
    def partial(self) -> bool:
        return is_partial(self.n_problems, self.n_total)

    def label(self) -> str:
        """'bootstrap SE, n=2/32 partial, 1 seed': what the ± is and what it covers."""
        return (
            f"{KIND_TAGS[self.kind]}, {coverage_text(self.n_problems, self.n_total, self.n_seeds)}"
        )

    def __str__(self) -> str:
        spread = "n/a" if self.spread is None else f"{self.spread:.3f}"
        return f"{self.mean:.3f} ± {spread} ({self.label()})"


def is_partial(n_problems: int, n_total: int) -> bool:
    """Fewer problems than the benchmark's evaluation set (0: the set's size is unknown):
    the one rule `stats`, `report` and `runs` all say "partial" by."""
    return 0 < n_problems < n_total


def coverage_text(n_problems: int, n_total: int, n_seeds: int) -> str:
    """'n=32, 3 seeds' or 'n=2/32 partial, 1 seed' (partial: fewer problems than the
    benchmark's evaluation set)."""
    n = f"n={n_problems}"
    if is_partial(n_problems, n_total):
        n = f"n={n_problems}/{n_total} partial"
    return f"{n}, {n_seeds} seed{'s' if n_seeds != 1 else ''}"


def kind_for(trained: bool, spread: Spread = "study") -> str:
    if spread not in SPREADS:
        raise ValueError(f"unknown spread {quote(spread)}; known: {', '.join(SPREADS)}")
    if spread == "seed-std" or (spread == "study" and trained):
        return "seed_std"
    return "bootstrap_se"


def cell_uncertainty(
    scores: ArrayLike,
    trained: bool,
    spread: Spread = "study",
    *,
    resamples: int = 1000,
    seed: int = 0,
    n_total: int = 0,
) -> Uncertainty:
    """Mean ± the named spread of a [seeds][problems] matrix of per-problem scores (every
    seed on the same problems). The mean is the same under every spread: the mean over
    seeds of each seed's mean over problems."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"scores must be a non-empty [seeds][problems] array, got {arr.shape}")
    n_seeds, n_problems = arr.shape
    kind = kind_for(trained, spread)
    if kind == "seed_std":
        per_seed = arr.mean(axis=1)
        std = float(per_seed.std(ddof=1)) if n_seeds > 1 else None
        return Uncertainty(float(per_seed.mean()), std, kind, n_problems, n_seeds, n_total)
    per_problem = arr.mean(axis=0)  # sampling seeds averaged per problem: one "seed"
    se = bootstrap_se(per_problem, resamples, seed) if n_problems > 1 else None
    return Uncertainty(float(per_problem.mean()), se, kind, n_problems, n_seeds, n_total)
