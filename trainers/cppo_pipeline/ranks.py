"""Which process this is, and its device, before the engine's Accelerator exists.

Under ``accelerate launch`` / torchrun every process runs the pipeline. The data stages (sft,
rm) are single-process work: the main process runs them while the others wait at a barrier,
and only the main process writes a stage's files and manifest. The RL stages run the engine
on every process (it splits the work). Devices come from accelerate's ``PartialState`` (the
process group and ``cuda:LOCAL_RANK`` it sets up are the ones the engine's Accelerator then
reuses), never a bare "cuda", which is every process's cuda:0.

The process group is made here, before the engine's Accelerator (which then reuses it), so
the engine section's ``dist_timeout_s`` is handed over first (``configure``): the idle
processes wait in a barrier for as long as the main process's longest single-process stage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from trainers.harness import env

T = TypeVar("T")

_TIMEOUT_S: list[int | None] = [None]


def configure(timeout_s: int | None) -> None:
    """The process group's time-out (TrainConfig ``dist_timeout_s``), before it exists."""
    _TIMEOUT_S[0] = timeout_s


def world_size() -> int:
    return env.world_size()


def _state() -> Any:
    import torch
    from accelerate import PartialState

    from trainers.engine.deepspeed_support import state_kwargs

    # the engine's arguments: a DeepSpeed launch without CUDA must not say cpu=True (it would
    # fix the shared state as DDP before the engine's Accelerator exists)
    return PartialState(**state_kwargs(torch.cuda.is_available(), _TIMEOUT_S[0]))


def device() -> str:
    """This process's device: cuda:LOCAL_RANK where CUDA is, else cpu."""
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    return str(_state().device)


def is_main() -> bool:
    if world_size() == 1:
        return True
    return bool(_state().is_main_process)


def barrier() -> None:
    if world_size() > 1:
        _state().wait_for_everyone()


def from_main(compute: Callable[[], T]) -> T:
    """``compute()`` on the main process, its result on every process (one broadcast): a
    verdict every process must act on alike, so that none is left waiting alone in a
    barrier. ``compute`` must return, not raise (the others would wait in the broadcast)."""
    if world_size() == 1:
        return compute()
    import torch.distributed as dist

    main = is_main()  # builds the shared state, and with it the process group
    box: list[Any] = [compute() if main else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]
