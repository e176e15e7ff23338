"""One store with a run of every method (and a trained checkpoint's run), then every `stats`
command, `report`, `runs` and the Python API over it (issue 38 item 1: a PlanSearch run's
own option `select=shuffle` was read as the pass@K selection rule and every stats command
ended in "unknown select rule 'shuffle'").

The runs use the scripted backend (tests/helpers/run_scripted.py): a deterministic reply per
request, so the whole file takes seconds. pass@k below K is checked against an oracle that
shares no code with the metrics: the mean over all k-subsets of the branches
(itertools) for exchangeable samples, and the first k branches for ordered tuples.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

import cppo_bench as cb
from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.problem import Problem
from cppo_bench.runner.pipeline import EvalSpec, execute
from cppo_bench.store.runs import iter_runs, read_manifest, read_records

K = 4
CODEGEN = [
    ("direct", []),
    ("plan_and_solve", []),
    ("plansearch", ["-m", "n_candidates=4", "-m", "n_observations=2", "-m", "max_subset=1"]),
    ("cppo", []),
    ("cppo", ["--seeds", "1"]),  # two seeds: `stats seeds` has a t interval to compute
    ("fixed_strategy", []),
    ("skills", []),
]
ORDERED = {"cppo", "fixed_strategy", "skills"}  # branches follow a tuple / hint order


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("store")
    demo = load_benchmark("demo").problems
    for method, extra in CODEGEN:
        args = ["run", "--method", method, "--bench", "demo", "-k", str(K), "--limit", "4"]
        res = invoke([*args, "--out", str(out), "--quiet", *extra], ScriptedBackend(demo))
        assert res.exit_code == 0, res.output
    trained = [
        "run", "--method", "direct", "--bench", "demo", "-k", str(K), "--limit", "4",
        "--model", "ckpt/pkpo-seed0", "--trained", "pkpo", "--base-model", "scripted-model",
        "--train-seed", "0", "--out", str(out), "--quiet",
    ]  # fmt: skip
    res = invoke(trained, ScriptedBackend(demo))
    assert res.exit_code == 0, res.output
    execution = [
        Problem(
            benchmark="lcb_execution", problem_id=str(i), statement=f"def f(x):\n    return x + {i}\n",
            tests=(), task="execution", label=str(i), metadata={"input": f"f({i})"},
        )
        for i in range(3)
    ]  # fmt: skip
    spec = EvalSpec(
        method="output_prediction", bench="lcb_execution", model="scripted-model",
        backend="scripted", k=K, sampling=SamplingParams(max_tokens=64),
    )  # fmt: skip
    execute(spec, execution, ScriptedBackend(), out)
    return out


def stats(*args: str):
    return invoke(["stats", *args])


def oracle(bits: str, k: int, ordered: bool) -> float:
    """pass@k of one problem: first k branches (ordered), else the mean over k-subsets."""
    if ordered:
        return float("1" in bits[:k])
    subsets = list(itertools.combinations(bits, k))
    return sum("1" in s for s in subsets) / len(subsets)


def test_every_stats_command_reads_a_store_with_every_method(store):
    for args in (
        ["passk", "--runs", str(store)],
        ["passk", "--runs", str(store), "--json"],
        ["passk", "--runs", str(store), "--estimator", "first"],
        ["passk", "--runs", str(store), "--estimator", "unbiased", "--k", "1,3"],
        ["tokens", "--runs", str(store), "--k", "2"],
        ["bootstrap", "--runs", str(store), "--a", "cppo", "--k", "2", "--resamples", "20"],
        ["seeds", "--runs", str(store), "--a", "cppo", "--b", "plansearch", "--k", "2"],
        ["diversity", "--runs", str(store), "--measures", "surf"],
    ):
        res = stats(*args)
        assert res.exit_code == 0, (args, res.output)
        assert "unknown select rule" not in res.output
    passk = stats("passk", "--runs", str(store), "--k", "1,2")
    assert "estimator" in passk.output and "first-K" in passk.output
    assert "unbiased" in passk.output


def test_pass_at_k_below_k_matches_the_oracle_per_method(store):
    cells = json.loads(stats("passk", "--runs", str(store), "--k", "1,2,3", "--json").output)
    by = {(c["benchmark"], c["method"], c["k"]): c for c in cells}
    frame = cb.load_runs(store)
    checked, wants = set(), {}
    for run in iter_runs(store):
        man = read_manifest(run)
        (label,) = set(frame[frame["run_dir"] == str(run)]["method_label"])
        if man.method == "output_prediction":
            assert by[(man.bench, label, 2)]["estimator"] == "maj@K"
            continue
        ordered = man.method in ORDERED
        last = man.method_options.get("select") == "last"
        bits = ["".join("1" if o else "0" for o in r.outcomes) for r in read_records(run).values()]
        for k in (1, 2, 3):
            if last:  # the last k of the planner's tuple
                want = sum(float("1" in b[K - k :]) for b in bits) / len(bits)
            else:
                want = sum(oracle(b, k, ordered) for b in bits) / len(bits)
            wants.setdefault((man.bench, label, k), []).append(want)
            prefix = "first-K" if ordered else "unbiased"
            assert by[(man.bench, label, k)]["estimator"].startswith(prefix), label
        checked.add((label, man.seed))
    assert len(checked) == len(CODEGEN) + 1  # every code-generation run and the trained one
    for key, per_seed in wants.items():  # a method's cell: the mean over its seeds
        assert by[key]["mean"] == pytest.approx(sum(per_seed) / len(per_seed)), key


def test_report_runs_and_the_api_read_the_store(store, tmp_path):
    res = invoke(["report", "--runs", str(store), "--out", str(tmp_path), "--resamples", "20"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "index.html").is_file()
    listed = invoke(["runs", "--out", str(store), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(x) for x in listed.stdout.splitlines()]
    assert {r["method"] for r in rows} >= {*ORDERED, "direct", "plansearch", "output_prediction"}

    frame = cb.load_runs(store)
    assert set(frame["method"]) >= {"plansearch", "cppo", "output_prediction"}
    plansearch = frame[frame["method"] == "plansearch"]
    assert set(plansearch["estimator"]) == {"unbiased"} and set(plansearch["select"]) == {"first"}
    assert set(frame[frame["method"] == "fixed_strategy"]["estimator"]) == {"first"}
    table = cb.stats.pass_at_k(frame, k=[1, 2])
    assert len(table) and set(table["estimator"]) >= {"unbiased", "first-K", "maj@K"}
    assert "pkpo" in set(frame["trained"].dropna())
    cb.stats.tokens(frame, k=2)
    cb.stats.bootstrap(frame, a="plansearch", k=2, resamples=20)
