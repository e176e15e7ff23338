"""The offline default shows signal: the embedded 135M model solves some of the demo's
easy tier (the first problems, what `cppo-bench run --bench demo --limit 5` runs), so a
working install is told apart from a broken one by a non-zero pass@K."""

from __future__ import annotations

import pytest

from cppo_bench.backends.base import SamplingParams
from cppo_bench.runner.pipeline import EvalSpec, execute, load_problems
from cppo_bench.store.runs import read_records

pytestmark = pytest.mark.slow


def test_embedded_model_solves_some_of_the_easy_tier(tmp_path):
    from cppo_bench.backends import BACKENDS

    problems = load_problems("demo", None, 2, {}).problems
    assert {p.difficulty for p in problems} == {"easy"}
    spec = EvalSpec(
        method="direct",
        bench="demo",
        model="embedded",
        backend="hf",
        k=4,
        seed=0,
        sampling=SamplingParams(temperature=0.7, top_p=0.95, max_tokens=160),
    )
    backend = BACKENDS.get("hf")(None)
    try:
        result = execute(spec, problems, backend, tmp_path)
    finally:
        backend.close()
    records = read_records(result.run_dir)
    solved = [pid for pid, rec in records.items() if any(b.passed for b in rec.branches)]
    assert solved, {pid: [b.verdict for b in r.branches] for pid, r in records.items()}
