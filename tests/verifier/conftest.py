"""The sandbox modes the verifier's hostile tests run in: each test that takes `mode` runs
once per mode, with the mode forced and probed afresh."""

from __future__ import annotations

import pytest

from cppo_bench.verifier import sandbox as sandbox_module

MODES = ["bwrap", "unshare", "rlimits"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch) -> str:
    monkeypatch.setenv(sandbox_module.MODE_ENV, request.param)
    monkeypatch.setattr(sandbox_module, "_MODE", None)
    monkeypatch.setattr(sandbox_module, "_WARNED", set())
    return request.param
