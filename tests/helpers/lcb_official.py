"""LiveCodeBench's released `testing_util` (grade_call_based, grade_stdio) as an oracle,
loaded from a local clone ($CPPO_LCB_CLONE or /tmp/lcb); the test skips, saying so, without
one. Nothing of it is copied into the project."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

CLONE = Path(os.environ.get("CPPO_LCB_CLONE", "/tmp/lcb"))
UTIL = CLONE / "lcb_runner" / "evaluation" / "testing_util.py"
_LOADED: list[ModuleType] = []


def official_testing_util() -> ModuleType:
    if not UTIL.is_file():
        pytest.skip(f"no LiveCodeBench clone at {CLONE} (set CPPO_LCB_CLONE)")
    if not _LOADED:
        spec = importlib.util.spec_from_file_location("lcb_testing_util", UTIL)
        assert spec is not None and spec.loader is not None, UTIL
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED.append(module)
    return _LOADED[0]
