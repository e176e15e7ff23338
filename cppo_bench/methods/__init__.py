"""The study's methods, one module each, registered by name.

`METHODS.get("cppo")` imports only cppo.py and returns its Method class; options come from
the class's typed options dataclass (`Method.from_options({...})`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cppo_bench.methods.base import Attempt, Method, MethodOptions, MethodOutput, OptionError
from cppo_bench.util.registry import Registry

METHODS: Registry[type[Method]] = Registry(
    "method",
    lazy={
        "direct": "cppo_bench.methods.direct:Direct",
        "plan_and_solve": "cppo_bench.methods.plan_and_solve:PlanAndSolve",
        "plansearch": "cppo_bench.methods.plansearch:PlanSearch",
        "cppo": "cppo_bench.methods.cppo:CPPO",
        "fixed_strategy": "cppo_bench.methods.fixed_strategy:FixedStrategy",
        "skills": "cppo_bench.methods.skills:Skills",
        "output_prediction": "cppo_bench.methods.output_prediction:OutputPrediction",
    },
    aliases={"plan-and-solve": "plan_and_solve", "plan_search": "plansearch"},
)


def passk_rule(method: str, options: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The (estimator, select) of pass@k < K for a run of `method` with `options` (the
    manifest's method_options): the one place a run's own options are read as a pass@K
    rule, so a method's unrelated option (PlanSearch's select=shuffle) never is. A method
    this install does not know (a plugin's run) is scored as exchangeable samples."""
    try:
        cls = METHODS.get(method)
    except KeyError:
        return ("unbiased", "first")
    return cls.passk_rule(options or {})


__all__ = [
    "METHODS",
    "Attempt",
    "Method",
    "MethodOptions",
    "MethodOutput",
    "OptionError",
    "passk_rule",
]
