"""The sandbox modes the verifier's hostile and fidelity tests run in: each test that takes
`mode` runs once per mode and per reuse mode (a kept child per program, or a fresh child per
test: `CPPO_SANDBOX_REUSE=1` / `0`), with the mode forced and probed afresh. Every such test
asserts the same verdicts in both reuse modes: a kept child must judge exactly as fresh ones
(issue 42)."""

from __future__ import annotations

import pytest

from cppo_bench.verifier import launch as launch_module
from cppo_bench.verifier import sandbox as sandbox_module

MODES = ["bwrap", "unshare", "rlimits"]
REUSE = {"kept": "1", "fresh": "0"}


@pytest.fixture(params=list(REUSE.values()), ids=list(REUSE))
def reuse(request, monkeypatch) -> str:
    """Both reuse modes (the pool keys its sandboxes by this setting: none is shared)."""
    monkeypatch.setenv(launch_module.REUSE_ENV, request.param)
    return request.param


@pytest.fixture(params=MODES)
def mode(request, monkeypatch, reuse) -> str:
    monkeypatch.setenv(sandbox_module.MODE_ENV, request.param)
    monkeypatch.setattr(sandbox_module, "_MODE", None)
    monkeypatch.setattr(sandbox_module, "_WARNED", set())
    return request.param
