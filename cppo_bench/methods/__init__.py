"""The study's methods, one module each, registered by name.

`METHODS.get("cppo")` imports only cppo.py and returns its Method class; options come from
the class's typed options dataclass (`Method.from_options({...})`).
"""

from __future__ import annotations

from cppo_bench.methods.base import Attempt, Method, MethodOptions, MethodOutput, OptionError
from cppo_bench.util.registry import Registry

METHODS: Registry[type[Method]] = Registry(
    "method",
    lazy={
        "direct": "cppo_bench.methods.direct",
        "plan_and_solve": "cppo_bench.methods.plan_and_solve",
        "plansearch": "cppo_bench.methods.plansearch",
        "cppo": "cppo_bench.methods.cppo",
        "fixed_strategy": "cppo_bench.methods.fixed_strategy",
        "skills": "cppo_bench.methods.skills",
        "output_prediction": "cppo_bench.methods.output_prediction",
    },
)

__all__ = ["METHODS", "Attempt", "Method", "MethodOptions", "MethodOutput", "OptionError"]
