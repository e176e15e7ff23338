"""The `strategies` task's optima (docs/learning.md), found numerically from its generator.

The docs derive them in closed form; here scipy optimises each objective over policies and
an enumeration checks every tuple, on the instances the loader really returns, so a generator
that leaked the answer into the prompt (or gave some strategy more instances) would fail."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.benchmarks import strategies as task
from cppo_bench.problem import Problem

scipy_optimize = pytest.importorskip("scipy.optimize")

SPLITS = ("train", "heldout")


def _by_statement(problems: list[Problem]) -> dict[str, list[str]]:
    """prompt -> the solving strategy of each of its instances (what a policy faces)."""
    out: dict[str, list[str]] = defaultdict(list)
    for p in problems:
        out[p.statement].append(p.tests[0].output.strip())
    return out


def _answer_probs(solvers: list[str]) -> np.ndarray:
    """P(strategy s solves | prompt), over the instances sharing the prompt."""
    counts = np.array([solvers.count(s) for s in task.STRATEGIES], dtype=float)
    return counts / counts.sum()


@pytest.mark.parametrize("split", SPLITS)
def test_the_splits_are_disjoint_deterministic_and_balanced(split: str) -> None:
    a = load_benchmark("strategies", split=split).problems
    assert [p.to_dict() for p in a] == [p.to_dict() for p in task.problems(split)]
    other = task.problems("heldout" if split == "train" else "train")
    assert not {p.statement for p in a} & {p.statement for p in other}
    for statement, solvers in _by_statement(a).items():
        category = next(w for w in statement.split() if w in task.CATEGORIES)
        assert sorted(solvers) == sorted(task.plausible(category))  # one instance each


@pytest.mark.parametrize("split", SPLITS)
def test_best_pass1_is_a_quarter(split: str) -> None:
    # pass@1 of a policy q(.|prompt) is sum_s q_s P(s); a linear program over the simplex
    for solvers in _by_statement(task.problems(split)).values():
        probs = _answer_probs(solvers)
        n = len(probs)
        res = scipy_optimize.linprog(-probs, A_eq=np.ones((1, n)), b_eq=[1], bounds=[(0, 1)] * n)
        assert res.status == 0 and -res.fun == pytest.approx(0.25, abs=1e-9)


@pytest.mark.parametrize("split", SPLITS)
def test_best_pass4_of_independent_samples(split: str) -> None:
    # pass@4 of 4 iid draws from q: 1 - sum_s P(s) (1 - q_s)^4; scipy from random starts
    rng = np.random.default_rng(0)
    best_closed = 1 - 0.75**4
    for solvers in list(_by_statement(task.problems(split)).values())[:6]:
        probs = _answer_probs(solvers)
        n = len(probs)

        def neg(q: np.ndarray, probs: np.ndarray = probs) -> float:
            return -(1 - float(np.sum(probs * (1 - q) ** 4)))

        best = max(
            -scipy_optimize.minimize(
                neg,
                rng.dirichlet(np.ones(n)),
                method="SLSQP",
                bounds=[(0, 1)] * n,
                constraints=[{"type": "eq", "fun": lambda q: np.sum(q) - 1}],
            ).fun
            for _ in range(8)
        )
        assert best == pytest.approx(best_closed, abs=1e-6)
        collapsed = np.eye(n)[int(np.argmax(probs))]
        assert -neg(collapsed) == pytest.approx(0.25)  # one plausible strategy only


@pytest.mark.parametrize("split", SPLITS)
def test_a_tuple_of_the_four_plausible_strategies_always_passes(split: str) -> None:
    # every 4-tuple of strategies (with repeats) enumerated: pass@4 of the tuple
    for statement, solvers in _by_statement(task.problems(split)).items():
        rates = {
            t: sum(s in t for s in solvers) / len(solvers)
            for t in itertools.product(task.STRATEGIES, repeat=4)
        }
        best = max(rates.values())
        assert best == 1.0
        category = next(w for w in statement.split() if w in task.CATEGORIES)
        assert {frozenset(t) for t, r in rates.items() if r == best} == {
            frozenset(task.plausible(category))
        }
        assert max(r for t, r in rates.items() if len(set(t)) < 4) == 0.75


def test_exactly_one_program_passes_each_instance_in_the_sandbox() -> None:
    from cppo_bench.verifier import VerifyJob, verify_batch

    problems = task.problems("heldout")[:8]
    jobs = [VerifyJob(p, task.program(s)) for p in problems for s in task.STRATEGIES]
    passed = [v.passed for v in verify_batch(jobs, workers=2)]
    for i, p in enumerate(problems):
        row = passed[i * len(task.STRATEGIES) : (i + 1) * len(task.STRATEGIES)]
        assert sum(row) == 1
        assert task.STRATEGIES[row.index(True)] == p.tests[0].output.strip()


def test_bad_options_are_one_line_errors() -> None:
    from cppo_bench.errors import DataError

    for opts in ({"split": "test"}, {"size": "x"}, {"size": 0}, {"colour": 1}):
        with pytest.raises(DataError, match="strategies benchmark"):
            load_benchmark("strategies", **opts)
    with pytest.raises(DataError, match="generated"):
        load_benchmark("strategies", data="/etc/passwd")
