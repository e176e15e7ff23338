"""The check registry and what a check may require (CUDA, GPUs, a module). A requirement
that this machine lacks raises ``Skip`` with the reason, so the line says SKIP and why."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# a plain checkout: the package and benchmarks/ import from here (nothing from tests/)
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class Skip(Exception):
    """The check cannot run here; the message says why."""


@dataclass(frozen=True)
class Check:
    fn: Callable[[Path], str]
    about: str  # one line for --help: what the check proves
    gpu: bool  # needs CUDA (SKIP without it); False: runs on the CPU too


CHECKS: dict[str, Check] = {}
# "cuda"; ``--device cpu`` runs the GPU checks on the CPU: a dry run of the script, which
# proves nothing about GPUs (the tests use it to keep the checks themselves working)
_DEVICE = ["cuda"]


def device() -> str:
    return _DEVICE[0]


def set_device(name: str) -> None:
    _DEVICE[0] = name


def check(name: str, about: str, gpu: bool = True) -> Callable[[Callable[[Path], str]], Callable]:
    def register(fn: Callable[[Path], str]) -> Callable[[Path], str]:
        CHECKS[name] = Check(fn, about, gpu)
        return fn

    return register


def need_cuda(gpus: int = 1) -> None:
    import torch

    if device() == "cpu" and gpus == 1:
        return
    if not torch.cuda.is_available():
        raise Skip("no CUDA device (torch.cuda.is_available() is False)")
    if torch.cuda.device_count() < gpus:
        raise Skip(f"needs {gpus} GPUs, this machine has {torch.cuda.device_count()}")


def need_module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        raise Skip(f"{name} is not installed")


def peak_gib() -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None
