"""pass@K: the unbiased estimator from n samples, and the study's "first K of an ordered
rollout" rule for tuple methods.

Two estimators, for two kinds of method:

- independent samples (Direct Solve with n >= K samples): the unbiased estimator
  1 - C(n-c, k) / C(n, k), averaged over problems;
- tuple methods (a planner emits a K=4 tuple, one program per strategy): the branches of a
  tuple are not exchangeable, so the study scores the K branches a method actually gets,
  picked from the ordered rollout (first / last / random K of the 4-tuple; for K > 4,
  ceil(K/4) independent tuples pooled).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from cppo_bench.store.outcomes import SELECTS
from cppo_bench.util.termsafe import quote

Select = Literal["first", "last", "random"]  # SELECTS (cppo_bench.store.outcomes), typed
TUPLE_SIZE = 4


def pass_at_k(n: ArrayLike, c: ArrayLike, k: int) -> np.ndarray | float:
    """Unbiased pass@k from `n` samples of which `c` passed; scalars or arrays (one per problem).

    Computed as the product prod_{i=n-c+1}^{n} (1 - k/i), never through binomial
    coefficients, so n in the thousands neither overflows nor loses precision. Returns a
    float for scalar input, else an array shaped like the broadcast of `n` and `c`.
    """
    n_arr, c_arr = np.broadcast_arrays(np.asarray(n), np.asarray(c))
    if k < 1:
        raise ValueError(f"pass@k needs k >= 1, got {k}")
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("pass@k needs 0 <= c <= n for every problem")
    if np.any(n_arr < k):
        raise ValueError(f"pass@{k} needs at least {k} samples per problem (min n = {n_arr.min()})")
    n_f = n_arr.astype(np.float64).ravel()
    c_i = c_arr.astype(np.int64).ravel()
    width = int(c_i.max()) if c_i.size else 0
    # study Eq. (pass@k, unbiased): 1 - C(n-c,k)/C(n,k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i)
    j = np.arange(width)
    i = n_f[:, None] - j[None, :]  # i = n, n-1, ..., n-c+1 (masked past c terms)
    live = j[None, :] < c_i[:, None]
    factors = np.where(live, 1.0 - k / np.where(live, i, 1.0), 1.0)
    fail_all = np.prod(factors, axis=1) if width else np.ones_like(n_f)
    # every k-subset contains a pass once fewer than k samples failed (the product hits 0 too,
    # but only up to rounding: make it exact)
    result = np.where(n_f - c_i < k, 1.0, 1.0 - fail_all)
    if np.ndim(n_arr) == 0:
        return float(result[0])
    return result.reshape(n_arr.shape)


def pass_at_k_exact(n: int, c: int, k: int) -> float:
    """The same estimator through exact integer binomials (slow; a reference for tests)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _as_matrix(outcomes: ArrayLike | Sequence[Sequence[bool]], need: int) -> np.ndarray:
    """[problems, branches] bool matrix; ragged rows are cut to `need` (and must reach it)."""
    if isinstance(outcomes, np.ndarray):
        mat = outcomes.astype(bool)
        if mat.ndim == 1:
            mat = mat[None, :]
    else:
        rows = [list(r) for r in cast(Sequence[Sequence[bool]], outcomes)]
        short = [i for i, r in enumerate(rows) if len(r) < need]
        if short:
            raise ValueError(
                f"problem row {short[0]} has {len(rows[short[0]])} branches; {need} are needed"
            )
        mat = np.array([r[:need] for r in rows], dtype=bool).reshape(len(rows), need)
    if mat.ndim != 2:
        raise ValueError(f"outcomes must be [problems, branches], got shape {mat.shape}")
    if mat.shape[1] < need:
        raise ValueError(f"outcomes have {mat.shape[1]} branches per problem; {need} are needed")
    return mat


def branches_needed(k: int, select: Select = "first", tuple_size: int = TUPLE_SIZE) -> int:
    """How many rollout branches the first-K rule reads for pass@k."""
    tuples = math.ceil(k / tuple_size)
    return k if select == "first" else tuples * tuple_size


def selection_mask(
    n_problems: int,
    k: int,
    select: Select = "first",
    *,
    tuple_size: int = TUPLE_SIZE,
    seed: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """[problems, branches_needed] bool mask of the branches the first-K rule counts.

    The rollout is ceil(k/tuple_size) tuples back to back; every tuple but the last counts
    whole and `select` picks the remaining r = k - tuple_size*(tuples-1) branches of the last:
    its first r, its last r, or r at random (per problem, from `seed`).
    """
    if select not in SELECTS:
        raise ValueError(f"select must be one of {', '.join(SELECTS)}, got {quote(select)}")
    if k < 1 or tuple_size < 1:
        raise ValueError(f"need k >= 1 and tuple_size >= 1, got k={k}, tuple_size={tuple_size}")
    width = branches_needed(k, select, tuple_size)
    mask = np.zeros((n_problems, width), dtype=bool)
    if select == "first":
        mask[:] = True
        return mask
    tuples = math.ceil(k / tuple_size)
    full = tuple_size * (tuples - 1)
    r = k - full
    mask[:, :full] = True
    if select == "last":
        mask[:, full + tuple_size - r :] = True
    else:
        rng = np.random.default_rng(seed)
        picks = np.argsort(rng.random((n_problems, tuple_size)), axis=1)[:, :r]
        np.put_along_axis(mask[:, full:], picks, True, axis=1)
    return mask


def pass_at_k_first(
    outcomes: ArrayLike | Sequence[Sequence[bool]],
    k: int,
    select: Select = "first",
    *,
    tuple_size: int = TUPLE_SIZE,
    seed: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Per-problem pass@k (0/1 floats) of ordered rollouts under the first-K rule.

    `outcomes` is [problems][branches] pass/fail in rollout order (branch j belongs to tuple
    j // tuple_size, as `ProblemRecord.outcomes` stores it). See `selection_mask` for which
    branches count; `seed` makes select="random" reproducible.
    """
    need = branches_needed(k, select, tuple_size)
    mat = _as_matrix(outcomes, need)[:, :need]
    mask = selection_mask(mat.shape[0], k, select, tuple_size=tuple_size, seed=seed)
    # study Eq. (pass@K of a rollout): solved iff any of the K selected branches passes
    solved: np.ndarray = np.any(mat & mask, axis=1)
    return solved.astype(np.float64)


def pass_at_k_unbiased(outcomes: Sequence[Sequence[bool]], k: int) -> np.ndarray:
    """Per-problem unbiased pass@k from each problem's independent samples (n_i may differ)."""
    n = np.array([len(r) for r in outcomes])
    c = np.array([int(sum(bool(x) for x in r)) for r in outcomes])
    return np.asarray(pass_at_k(n, c, k), dtype=np.float64).reshape(len(n))


def benchmark_pass_at_k(per_problem: ArrayLike) -> float:
    """Benchmark pass@k: the mean of the per-problem values."""
    values = np.asarray(per_problem, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no problems to average")
    # study Eq. (benchmark pass@K): mean over problems
    return float(values.mean())
