"""cppo-bench: evaluate and train code-generation LMs under a fixed pass@K budget.

The public Python API (the CLI commands call the same functions)::

    import cppo_bench as cb
    problems = cb.load_benchmark("demo", difficulty="easy")
    verdicts = cb.verify(problems[:1], [problems[0].reference_solutions[0]])
    run = cb.run("direct", "demo", k=4, seeds=[0], limit=1, out="runs")
    frame = cb.load_runs("runs")                 # a pandas DataFrame, one row per problem
    cb.samples(run.results[0].run_dir)           # per problem: statement, programs, verdicts
    cb.stats.pass_at_k(frame, k=[1, 4])          # mean ± the study's uncertainty, with n

Training is ``from trainers import train`` (the harness never imports the trainers).
Names are imported on first use, so ``import cppo_bench`` stays light (no torch, no pandas).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cppo_bench.util.termsafe import quote
from cppo_bench.util.version import __version__

# public name -> "module:attribute" ("module:" for a module)
_EXPORTS: dict[str, str] = {
    "load_benchmark": "cppo_bench.api:load_benchmark",
    "verify": "cppo_bench.api:verify",
    "run": "cppo_bench.api:run",
    "samples": "cppo_bench.api:samples",
    "rejudge": "cppo_bench.api:rejudge",
    "Run": "cppo_bench.api:Run",
    "RunConfig": "cppo_bench.api:RunConfig",
    "api": "cppo_bench.api:",
    "load_runs": "cppo_bench.stats.read:load_runs",
    "stats": "cppo_bench.stats:",
    "Problem": "cppo_bench.problem:Problem",
    "Verdict": "cppo_bench.verifier.records:VerifyResult",
    "DataError": "cppo_bench.errors:DataError",
    "VerifierClient": "cppo_bench.serve.client:VerifierClient",
}

__all__ = [
    "DataError",
    "Problem",
    "Run",
    "RunConfig",
    "Verdict",
    "VerifierClient",
    "__version__",
    "api",
    "load_benchmark",
    "load_runs",
    "rejudge",
    "run",
    "samples",
    "stats",
    "verify",
]

if TYPE_CHECKING:
    from cppo_bench import api, stats
    from cppo_bench.api import Run, RunConfig, load_benchmark, rejudge, run, samples, verify
    from cppo_bench.errors import DataError
    from cppo_bench.problem import Problem
    from cppo_bench.serve.client import VerifierClient
    from cppo_bench.stats.read import load_runs
    from cppo_bench.verifier.records import VerifyResult as Verdict


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'cppo_bench' has no attribute {quote(name)}")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    if attr:
        value = getattr(value, attr)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
