"""Every script under benchmarks/ starts as a user runs it: `python benchmarks/NAME.py --help`
from the repository root, with no PYTHONPATH (a script once imported a verifier module that
had moved, and only its users saw `No module named 'child'`). Modules without a main (helpers
the scripts import) are imported the way their script imports them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))
MAIN = re.compile(r"^if __name__ == .__main__.:", re.M)


def user_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def has_main(path: Path) -> bool:
    return bool(MAIN.search(path.read_text()))


@pytest.mark.parametrize("script", [p for p in SCRIPTS if has_main(p)], ids=lambda p: p.name)
def test_script_help_runs_from_the_repository_root(script: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(script.relative_to(REPO)), "--help"],
        cwd=REPO, env=user_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "usage:" in proc.stdout.lower() and "Traceback" not in proc.stderr


@pytest.mark.parametrize("module", [p for p in SCRIPTS if not has_main(p)], ids=lambda p: p.name)
def test_helper_module_imports_as_its_script_imports_it(module: Path) -> None:
    """The scripts put their own folder first on sys.path and import helpers by name."""
    code = f"import sys; sys.path.insert(0, {str(module.parent)!r}); import {module.stem}"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=user_env(), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_every_script_is_covered() -> None:
    assert len(SCRIPTS) >= 10 and any(has_main(p) for p in SCRIPTS)
