"""The README's set-up commands install the system tools (bubblewrap, and chromium for the
tests) themselves, and `.ci/run` runs the README's test command rather than one of its own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _setup_blocks() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Set-up\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, re.S)


def test_readme_set_up_is_two_commands_that_start_with_the_system_set_up():
    main_job, tests = _setup_blocks()
    assert main_job.startswith("bash .ci/setup && ") and "\n" not in main_job
    assert tests.startswith("bash .ci/setup --tests && ") and "\n" not in tests
    # two pytest-xdist workers; loadgroup keeps each module, and the launching modules
    # together, on one worker (tests/conftest.py; the default --dist load would split them)
    assert tests.endswith("&& python -m pytest -q -n 2 --dist loadgroup")


def test_ci_runs_the_readme_command_in_a_fresh_venv_and_installs_nothing_itself():
    ci = (REPO / ".ci" / "run").read_text()
    assert "apt-get" not in ci and "pip install" not in ci
    assert "README.md" in ci and "sandbox_mode" in ci
    assert '-m venv "$venv"' in ci and "bin/activate" in ci and "-u PYTHONPATH" in ci
    for check in ("ruff check .", "ruff format --check .", "mypy", ".ci/commit-subjects"):
        assert check in ci


def test_setup_venv_layers_over_the_running_python_even_a_venv(tmp_path):
    """`.ci/setup --venv DIR` (the side venvs', the quick-start test's): DIR sees what the
    Python that built it sees, its .pth-installed packages included. --system-site-packages
    would reach the base interpreter instead, which under a user's venv lacks them."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    probe = "import click, numpy, cppo_bench; print(cppo_bench.__file__)"
    parent = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    done = subprocess.run(["bash", str(REPO / ".ci" / "setup"), "--venv", str(tmp_path / "v")],
                          env={**env, "PYTHON": sys.executable}, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    child = subprocess.run([str(tmp_path / "v" / "bin" / "python"), "-c", probe], env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    # the same packages, the project (an editable install: a .pth file) included when the
    # parent has it without PYTHONPATH
    assert (child.returncode, child.stdout) == (parent.returncode, parent.stdout), child.stderr
    assert "No module named 'click'" not in child.stderr


@pytest.mark.parametrize(("args", "packages"), [([], "bubblewrap"),
                                                (["--tests"], "bubblewrap chromium")])  # fmt: skip
def test_setup_installs_what_is_missing_with_apt(tmp_path, args, packages):
    """On a machine without the tools (a PATH holding only shims), as root: apt-get is asked
    for exactly the missing packages."""
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    (bin_dir / "id").write_text("#!/bin/sh\necho 0\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    bash = shutil.which("bash")
    assert bash
    env = dict(os.environ, PATH=str(bin_dir))
    done = subprocess.run([bash, str(REPO / ".ci" / "setup"), *args], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0].startswith("update")
    assert calls[1].endswith(f"install -y -qq {packages}")
