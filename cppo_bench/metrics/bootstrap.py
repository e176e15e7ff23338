"""Hierarchical bootstrap over problems and training seeds, and the one-sided test behind the
study's dagger marks (a method beats the strongest non-CPPO baseline of its table cell).

Each resample draws the benchmark's problems with replacement (the same draw for every
method: comparisons stay paired) and, for each trained method, one of its seeds with
replacement; a method's resampled score is that seed's mean over the drawn problems.
Inference-only methods have a single "seed", so only problems vary for them.

Calibration: with one run per method this is a paired problem bootstrap and rejects a true
null at about alpha. With several seeds it compares the all-seed mean against resamples
built from ONE seed, whose spread is wider: the test is conservative (with 3 seeds of one
distribution, under 1% false positives at alpha = 0.05; see tests/metrics/test_metrics_bootstrap.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from cppo_bench.errors import UserError
from cppo_bench.util.termsafe import quote


@dataclass(frozen=True)
class BootstrapResult:
    methods: tuple[str, ...]
    observed: dict[str, float]  # mean over seeds and problems of the real data
    samples: np.ndarray  # [methods, resamples]: each resample's benchmark score per method
    resamples: int
    seed: int

    def distribution(self, method: str) -> np.ndarray:
        return np.asarray(self.samples[self._row(method)])

    def p_value(self, a: str, b: str) -> float:
        """One-sided p-value for "A beats B": the share of resamples where A does not score
        above B, with the +1 correction (1 + #{A* - B* <= 0}) / (1 + R), so p >= 1/(1+R)."""
        diff = self.samples[self._row(a)] - self.samples[self._row(b)]
        # study Eq. (bootstrap p): P*(score_A - score_B <= 0) over hierarchical resamples
        return float((1 + np.count_nonzero(diff <= 0)) / (1 + self.resamples))

    def interval(self, method: str, confidence: float = 0.95) -> tuple[float, float]:
        """Percentile interval of a method's resampled score."""
        tail = (1.0 - confidence) / 2.0 * 100.0
        lo, hi = np.percentile(self.distribution(method), [tail, 100.0 - tail])
        return float(lo), float(hi)

    def _row(self, method: str) -> int:
        try:
            return self.methods.index(method)
        except ValueError:
            raise KeyError(f"no method {quote(method)}; have {', '.join(self.methods)}") from None


def _as_seed_matrix(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"method {quote(name)}: outcomes must be [seeds][problems], got {arr.shape}"
        )
    return arr


# resamples x problems one bootstrap draws. Memory is bounded whatever the size (the draws are
# made CHUNK_DRAWS at a time); this bounds the time (~2^31 draws: about a minute on one core):
# --resamples 1000000000 was a 477 GiB allocation and a traceback
MAX_DRAWS = 1 << 31
CHUNK_DRAWS = 1 << 22  # draws per chunk: ~32 bytes each, ~128 MiB
MAX_RESAMPLES = 1 << 22  # each kept per method and seed (8 bytes): 32 MiB each


class BootstrapSizeError(UserError, ValueError):
    """More resamples than the bootstrap can hold for this many problems: one line."""


def problem_draws(
    rng: np.random.Generator, resamples: int, n_problems: int, rows: int
) -> Iterator[tuple[int, np.ndarray]]:
    """The problem indices of one bootstrap, `rows` resamples at a time: (first resample,
    indices [r, P]) shared by all methods. The same stream whatever `rows` (numpy fills
    row after row), so memory is a chunk's and the numbers are one whole draw's."""
    for start in range(0, resamples, rows):
        yield start, rng.integers(0, n_problems, size=(min(rows, resamples - start), n_problems))


def seed_draws(
    rng: np.random.Generator, resamples: int, n_seeds: Sequence[int]
) -> list[np.ndarray]:
    """After the problem draws: one seed index per resample for each method, in method order."""
    return [rng.integers(0, s, size=resamples) for s in n_seeds]


def draws(
    rng: np.random.Generator, resamples: int, n_problems: int, n_seeds: Sequence[int]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The random draws of one bootstrap, whole: problem indices [R, P], then the seeds."""
    ((_, problems),) = problem_draws(rng, resamples, n_problems, max(resamples, 1))
    return problems, seed_draws(rng, resamples, n_seeds)


def hierarchical_bootstrap(
    outcomes: Mapping[str, ArrayLike], *, resamples: int = 1000, seed: int = 0
) -> BootstrapResult:
    """Resampled benchmark scores of every method.

    `outcomes` maps a method to its [seeds][problems] per-problem scores (pass@K 0/1 or
    unbiased values; a 1-D array is one seed). Every method must cover the same problems in
    the same order. Deterministic for a given `seed`.
    """
    if not outcomes:
        raise ValueError("no methods to bootstrap")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    names = tuple(outcomes)
    mats = [_as_seed_matrix(n, outcomes[n]) for n in names]
    n_problems = mats[0].shape[1]
    for name, mat in zip(names, mats, strict=True):
        if mat.shape[1] != n_problems:
            raise ValueError(
                f"method {quote(name)} has {mat.shape[1]} problems, {quote(names[0])} has {n_problems}: "
                "the bootstrap pairs problems across methods"
            )
    if resamples > MAX_RESAMPLES:
        raise BootstrapSizeError(
            f"{resamples:,} bootstrap resamples are past the {MAX_RESAMPLES:,} one bootstrap keeps"
        )
    if resamples * n_problems > MAX_DRAWS:
        raise BootstrapSizeError(
            f"{resamples:,} bootstrap resamples over {n_problems:,} problems are past the "
            f"{MAX_DRAWS:,} draws one bootstrap makes; at most {MAX_DRAWS // n_problems:,} "
            "resamples here"
        )
    rng = np.random.default_rng(seed)
    # per method, every seed's score in every resample: [seeds, R]; the seed picked for each
    # resample is drawn after all the problem draws (seed_draws), so it is applied at the end
    per_seed = [np.empty((m.shape[0], resamples), dtype=np.float64) for m in mats]
    for start, problems in problem_draws(
        rng, resamples, n_problems, max(1, CHUNK_DRAWS // n_problems)
    ):
        r = len(problems)
        # How often each problem was drawn in each resample: [r, P]. A resample's score is
        # then a weighted mean of a seed's row (einsum's own loop: no BLAS threads to contend for).
        offsets = (np.arange(r) * n_problems)[:, None]
        flat = np.bincount((problems + offsets).ravel(), minlength=r * n_problems)
        counts = flat.reshape(r, n_problems).astype(np.float64)
        for mat, scores in zip(mats, per_seed, strict=True):
            scores[:, start : start + r] = np.einsum("rp,sp->sr", counts, mat) / n_problems
    seed_picks = seed_draws(rng, resamples, [m.shape[0] for m in mats])
    samples = np.empty((len(mats), resamples), dtype=np.float64)
    for i, (scores, picks) in enumerate(zip(per_seed, seed_picks, strict=True)):
        # study Eq. (hierarchical bootstrap): problems and seeds both resampled with replacement
        samples[i] = scores[picks, np.arange(resamples)]
    observed = {n: float(m.mean()) for n, m in zip(names, mats, strict=True)}
    return BootstrapResult(names, observed, samples, resamples, seed)


def bootstrap_p_value(
    outcomes: Mapping[str, ArrayLike], a: str, b: str, *, resamples: int = 1000, seed: int = 0
) -> float:
    """One-sided p-value that method A beats method B (see BootstrapResult.p_value)."""
    subset = {a: outcomes[a], b: outcomes[b]}
    return hierarchical_bootstrap(subset, resamples=resamples, seed=seed).p_value(a, b)


@dataclass(frozen=True)
class Dagger:
    method: str
    baseline: str  # the strongest baseline of the cell (highest observed score)
    p_value: float
    significant: bool  # p < alpha: the table marks the method with a dagger


def dagger_marks(
    result: BootstrapResult,
    candidates: Sequence[str],
    baselines: Sequence[str],
    alpha: float = 0.05,
) -> list[Dagger]:
    """Test each candidate (CPPO variants) against the strongest baseline of the cell."""
    if not baselines:
        raise ValueError("no baselines to compare against")
    best = max(baselines, key=lambda m: result.observed[m])
    out = []
    for method in candidates:
        p = result.p_value(method, best)
        out.append(Dagger(method, best, p, p < alpha))
    return out
