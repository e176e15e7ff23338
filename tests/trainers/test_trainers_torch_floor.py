"""The engine's torch floor (issue 43 item 5): torch 2.11 keeps FSDP2's parameter groups under
another private name than 2.13 (``_fsdp_param_group``, one per unit, against 2.13's list
``_fsdp_param_groups``), and ``sharding.gathered`` read only 2.13's: after the first rollout no
unit resharded after forward, losing FSDP2's memory saving without a word. Every read now
goes through ``sharding.param_groups``; the FSDP2 tests run again under torch 2.11 in the
side venv ``bash .ci/setup --venvs`` builds (PyPI's 2.11 wheel, run on the CPU), and a torch
older than the floor (pyproject's pin) is one line before a run builds anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env, venv_python

torch = pytest.importorskip("torch")
PYTHON = venv_python("torch-211", "TORCH211_PYTHON", "/nonexistent/torch-211/bin/python")
# the FSDP2 tests that read FSDP2's private state (resharding, offload policies)
FSDP_TESTS = [
    "tests/trainers/test_trainers_fsdp_gathers.py",
    "tests/trainers/test_trainers_fsdp.py::test_offload_layout_and_process_group_in_process",
]


def test_a_torch_below_the_floor_is_one_line_before_anything_is_built(
    tmp_path: Path, toy_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toy_task import run

    monkeypatch.setattr(torch, "__version__", "2.10.0+cu128")
    with pytest.raises(ValueError, match=r"^torch 2\.10\.0\+cu128: the training engine needs "):
        run(tmp_path / "run", toy_model, steps=1)
    assert not (tmp_path / "run").exists()  # refused before the run wrote anything


def test_the_floor_is_pyprojects_pin() -> None:
    import tomllib

    from trainers.engine.setup import MIN_TORCH

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(d for d in deps if d.startswith("torch"))
    assert pin.startswith("torch>=" + ".".join(map(str, MIN_TORCH)) + ","), pin


@pytest.mark.slow
@pytest.mark.xdist_group("multiprocess")
def test_fsdp2_tests_pass_under_torch_2_11() -> None:
    if not PYTHON.is_file():
        pytest.skip(f"no torch 2.11 venv at {PYTHON} (bash .ci/setup --venvs builds it)")
    env = toy_env()
    env["PATH"] = os.pathsep.join([str(PYTHON.parent), env.get("PATH", "")])  # its torchrun
    version = subprocess.run(
        [str(PYTHON), "-c", "import torch; print(torch.__version__)"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert version.startswith("2.11."), version
    cmd = [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    proc = subprocess.run(
        [*cmd, *FSDP_TESTS], cwd=REPO, env=env, capture_output=True, text=True, timeout=1200
    )
    tail = proc.stdout[-3000:]
    assert proc.returncode == 0, tail
    assert f"{len(FSDP_TESTS)} passed" in tail, tail
