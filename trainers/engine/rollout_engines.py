"""The rollout engines by name (``rollout_engine`` in the engine's config).

A leaf above both engines: `rollout.py` (hf) and `rollout_vllm.py` import nothing of this
table, so it may name them (a table inside rollout.py, naming rollout_vllm, which imports
rollout.py, was a loop: tests/trainers/test_trainers_structure.py).
"""

from __future__ import annotations

from collections.abc import Callable

from trainers.engine.rollout import RolloutEngine
from trainers.harness import Registry

# name -> factory(model, tokenizer, options) -> RolloutEngine
ROLLOUT_ENGINES: Registry[Callable[..., RolloutEngine]] = Registry(
    "rollout engine",
    lazy={
        "hf": "trainers.engine.rollout:make_hf_rollout",
        "vllm": "trainers.engine.rollout_vllm:make_vllm_rollout",
    },
)
