"""Spread over seeds: mean +- std for table cells, and per-seed differences with a Student-t
confidence interval (the study's per-seed table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from cppo_bench.util.termsafe import quote

# How an inference-only cell's ± is computed: the bootstrap standard error of the mean over
# problems (the study: "variation over evaluation problems", on its +-0.01-0.02 scale), or
# the sample std of the per-problem scores (kept by name; +-0.50 for a 0/1 mean near 0.5).
InferenceSpread = Literal["bootstrap_se", "std"]


@dataclass(frozen=True)
class MeanStd:
    mean: float
    std: float  # sample std (ddof=1); 0.0 when there is a single value
    n: int  # how many values the std is over (seeds, or problems)
    over: str  # "seeds" | "problems"
    kind: str = "std"  # "std" | "bootstrap_se": what the ± is

    def __str__(self) -> str:
        return f"{self.mean:.3f} ± {self.std:.3f}"


def bootstrap_se(values: ArrayLike, resamples: int = 1000, seed: int = 0) -> float:
    """Bootstrap standard error of the mean of `values`: the sample std (ddof=1) of the
    means of `resamples` resamples of the values with replacement (the same draws as
    the report's hierarchical bootstrap with one seed)."""
    from cppo_bench.metrics.bootstrap import hierarchical_bootstrap

    arr = np.asarray(values, dtype=np.float64).ravel()
    if arr.size < 2:
        return 0.0
    boot = hierarchical_bootstrap({"x": arr[None, :]}, resamples=resamples, seed=seed)
    return float(boot.distribution("x").std(ddof=1))


def mean_std(
    scores: ArrayLike,
    trained: bool,
    inference_spread: InferenceSpread = "bootstrap_se",
    resamples: int = 1000,
    seed: int = 0,
) -> MeanStd:
    """Mean +- spread of a table cell, as the study defines it.

    `scores` is [seeds][problems] of per-problem scores (pass@K 0/1 or unbiased values).
    Trained methods: the benchmark score of each seed (its mean over problems), then the
    mean and the sample std (ddof=1) over seeds. Inference-only methods (one "seed"): the
    mean over problems and, by default, its bootstrap standard error over problems
    (`resamples` resamples, seeded); `inference_spread="std"` gives the sample std of the
    per-problem scores instead. With one value the spread is 0.0.
    """
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"scores must be a non-empty [seeds][problems] array, got {arr.shape}")
    if trained:
        values, over = arr.mean(axis=1), "seeds"
    else:
        if arr.shape[0] != 1:
            raise ValueError(f"an inference-only method has one seed, got {arr.shape[0]}")
        values, over = arr[0], "problems"
        if inference_spread == "bootstrap_se":
            se = bootstrap_se(values, resamples, seed)
            return MeanStd(float(values.mean()), se, int(values.size), over, "bootstrap_se")
        if inference_spread != "std":
            raise ValueError(f"unknown inference_spread {quote(inference_spread)}")
    # study Eq. (mean ± std): Bessel-corrected sample std over seeds / problems
    std = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return MeanStd(mean=float(values.mean()), std=std, n=int(values.size), over=over)


@dataclass(frozen=True)
class SeedCI:
    mean: float
    low: float
    high: float
    std: float  # sample std of the differences (ddof=1)
    n: int
    confidence: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def seed_difference_ci(deltas: ArrayLike, confidence: float = 0.95) -> SeedCI:
    """Mean of per-seed differences (method A minus B on the same seed) and its two-sided
    Student-t interval with n-1 degrees of freedom: mean +- t * s / sqrt(n), s with ddof=1.

    Study example: (+0.010, +0.021, +0.038) -> +0.023 [-0.012, +0.058].
    """
    from scipy import stats

    d = np.asarray(deltas, dtype=np.float64).ravel()
    if d.size < 2:
        raise ValueError(f"a t interval needs at least 2 seeds, got {d.size}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = float(d.mean())
    s = float(d.std(ddof=1))
    # study Eq. (per-seed CI): mean ± t_{(1+conf)/2, n-1} · s / sqrt(n)
    half = float(stats.t.ppf((1.0 + confidence) / 2.0, d.size - 1)) * s / np.sqrt(d.size)
    return SeedCI(mean, mean - half, mean + half, s, int(d.size), confidence)


def paired_seed_deltas(a: dict[int, float], b: dict[int, float]) -> np.ndarray:
    """A - B per seed, over the seeds both methods have (sorted); errors if none match."""
    common = sorted(set(a) & set(b))
    if not common:
        raise ValueError(f"no common seeds: A has {sorted(a)}, B has {sorted(b)}")
    return np.array([a[s] - b[s] for s in common], dtype=np.float64)
