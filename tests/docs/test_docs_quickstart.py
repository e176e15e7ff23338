"""The README's quick start runs as written, in a fresh virtual environment: the venv sees the
packages of the Python running the tests (torch, transformers: the README's set-up installed
them; `.ci/setup --venv` layers it over that Python, a venv itself or not), this checkout is
installed into it with `pip install --no-deps -e .`, and its command lines run with the venv's
own `cppo-bench`, then its Python block and the blocks of docs/python-api.md with the venv's
python, all in one scratch folder, with the embedded model on the CPU (about two minutes). The Python run resumes the CLI's run (same identity), so
both must agree; the stats table the Python prints is checked against the CLI's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import toy_env

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def quick_start() -> tuple[list[str], str]:
    text = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (bash,) = re.findall(r"(?ms)^```bash\n(.*?)^```$", text)
    (python,) = re.findall(r"(?ms)^```python\n(.*?)^```$", text)
    lines = [line.split("  #", 1)[0].strip() for line in bash.splitlines()]
    return [line for line in lines if line], python


def fresh_venv(where: Path) -> tuple[Path, dict[str, str]]:
    """(venv bin folder, environment) of a new venv with this checkout installed into it."""
    venv = where / "venv"
    # layered over the Python running the tests by the set-up's own helper (a venv built with
    # --system-site-packages reaches the BASE Python, which under a user's venv lacks rich)
    subprocess.run(["bash", str(REPO / ".ci" / "setup"), "--venv", str(venv)],
                   env={**os.environ, "PYTHON": sys.executable}, check=True, timeout=300)  # fmt: skip
    env = {k: v for k, v in toy_env().items() if k != "PYTHONPATH"}  # the venv's install only
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0 and "Could not" in done.stderr:  # no package index to build from
        pytest.skip(f"pip could not build the package here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    return venv / "bin", env


def test_readme_quick_start_runs_as_written(tmp_path):
    commands, python = quick_start()
    assert all(c.startswith("cppo-bench ") for c in commands) and len(commands) <= 10
    bin_dir, env = fresh_venv(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    for command in commands:
        done = subprocess.run(
            command, shell=True, cwd=work, env=env, capture_output=True, text=True,
            timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr
    assert (work / "reports" / "index.html").is_file()
    runs = list((work / "runs").rglob("manifest.json"))
    assert len(runs) == 1

    api_doc = (REPO / "docs" / "python-api.md").read_text()
    blocks = [python, *re.findall(r"(?ms)^```python\n(.*?)^```$", api_doc)]
    script = "\n\n".join(blocks) + (
        "\nimport json\n"
        "print('PASSK', json.dumps(cb.stats.pass_at_k(cb.load_runs('runs'), k=[1, 2])"
        "[['method', 'k', 'mean']].to_dict('records')))\n"
    )
    done = subprocess.run(
        [str(bin_dir / "python"), "-c", script], cwd=work, env=env, capture_output=True,
        text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "AC" in done.stdout.splitlines()[0]
    # the Python run found the CLI's run complete: still one run, nothing generated anew
    assert len(list((work / "runs").rglob("manifest.json"))) == 1
    api = json.loads(done.stdout.split("PASSK ", 1)[1].splitlines()[0])
    cli = subprocess.run(
        [str(bin_dir / "cppo-bench"), "stats", "passk", "--runs", "runs", "--k", "1,2",
         "--json"], cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    want = [{"method": c["method"], "k": c["k"], "mean": c["mean"]} for c in json.loads(cli.stdout)]
    assert sorted(api, key=lambda r: r["k"]) == sorted(want, key=lambda r: r["k"])
