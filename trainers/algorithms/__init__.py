"""The training algorithms (PKPO, pass@K-RL, UpSkill, CPPO) on the shared engine; their
loss math lives in trainers/core under the same names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainers.harness import Registry

if TYPE_CHECKING:
    from trainers.engine.algorithm import Algorithm

# The algorithms by name, each "module:class" imported on lookup. The table lives here, above
# the engine: the engine never names an algorithm (tests/trainers/test_trainers_structure.py).
ALGORITHMS: Registry[type[Algorithm]] = Registry(
    "algorithm",
    lazy={
        "pkpo": "trainers.algorithms.pkpo:PKPO",
        "passk_rl": "trainers.algorithms.passk_rl:PassKRL",
        "upskill": "trainers.algorithms.upskill:UpSkill",
        "cppo": "trainers.algorithms.cppo:CPPO",
    },
)
