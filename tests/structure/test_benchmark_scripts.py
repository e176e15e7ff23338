"""Every script under benchmarks/ runs as a user runs it: `python benchmarks/NAME.py --help`,
and its smallest mode, from the repository root, with no PYTHONPATH (a script once imported
a verifier module that had moved, and only its users saw `No module named 'child'`).
Modules without a main (helpers the scripts import) are imported the way their script
imports them, and run through their script's smallest mode."""

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


def _apps_sample() -> Path:
    # the shared APPS sample the throughput scripts default to (beside the checkout)
    return REPO.parent / "shared" / "data" / "apps"


# script -> (its smallest mode: arguments its docstring's usage line names, what its output
# then says, whether it takes over a minute on this CPU). The helper modules run inside
# them: inprocess_baseline.py and naive_baseline.py through verifier_throughput.py.
SMALLEST: dict[str, tuple[list[str], str, bool]] = {
    "judge_time.py": (["--mb", "0.01"], '"cpu_s"', False),
    "stats_speed.py": (
        ["--resamples", "20", "--problems", "10", "--seeds", "2", "--methods", "2"], "speed-up",
        False,
    ),
    "logits_chunk.py": (
        ["--vocab", "512", "--hidden", "16", "--rows", "1", "--completion", "32",
         "--chunks", "0,16"], "chunk    16", True,
    ),
    "run_overhead.py": (
        ["--backend", "instant", "--limit", "1", "--k", "1", "--max-tokens", "8"],
        "harness incl. verifier", False,
    ),
    "serve_throughput.py": (
        ["--workers", "1", "--clients", "1", "--batch", "1", "--rounds", "1"],
        "ratio service / in-process", True,
    ),
    "gpu_smoke.py": (["--only", "verifier"], "1 passed", False),
    "verifier_throughput.py": (
        ["--data", str(_apps_sample()), "--workers", "1", "--per-problem", "1", "--limit", "2",
         "--rounds", "1", "--against", "none", "--naive"], "overhead over an empty program",
        False,
    ),
    "train_step.py": (
        ["--tiny", "--prompts", "1", "--n", "2", "--max-tokens", "4", "--micro", "2"],
        "update_over_bare", False,
    ),
    # needs a clone of LiveCodeBench's own repository (--lcb-clone): no smaller mode
    "lcb_official_baseline.py": ([], "", True),
}  # fmt: skip


def _smallest_cases() -> list[object]:
    out: list[object] = []
    for name, (_, _, slow) in sorted(SMALLEST.items()):
        marks = [pytest.mark.slow] if slow else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("name", _smallest_cases())
def test_script_smallest_mode_runs_from_the_repository_root(name: str, tmp_path: Path) -> None:
    args, says, _ = SMALLEST[name]
    script = REPO / "benchmarks" / name
    if not args:
        pytest.skip(f"{name}: no mode runs without an external clone (see its docstring)")
    if "--data" in args and not Path(args[args.index("--data") + 1]).is_dir():
        pytest.skip(f"{name}: the shared APPS sample is not beside this checkout")
    text = script.read_text(encoding="utf-8")
    usage = text.split('"""')[1]  # the docstring: every flag used is one it shows a user
    assert all(a in usage for a in args if a.startswith("--")), (name, args)
    proc = subprocess.run(
        [sys.executable, f"benchmarks/{name}", *args], cwd=REPO, env=user_env(),
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert says in proc.stdout, proc.stdout[-3000:]


# scripts whose smallest mode another test runs as a user does (with more checks of what it
# leaves behind): the script's name -> that test file
ELSEWHERE = {"learning.py": "tests/trainers/test_trainers_strategies.py"}


def test_every_script_is_covered() -> None:
    assert len(SCRIPTS) >= 10 and any(has_main(p) for p in SCRIPTS)
    # each script with a main has its smallest mode above (a new script must add one)
    assert {p.name for p in SCRIPTS if has_main(p)} == set(SMALLEST) | set(ELSEWHERE)
    for name, test in ELSEWHERE.items():
        assert f"benchmarks/{name}" in (REPO / test).read_text(), (name, test)
