"""The README's quick start runs as written: its command lines in a shell (the installed
`cppo-bench` with this checkout first on PYTHONPATH), then its Python block and the blocks of
docs/python-api.md in a fresh interpreter, all in one scratch folder, with the embedded model
on the CPU (about two minutes). The Python run resumes the CLI's run (same identity), so
both must agree; the stats table the Python prints is checked against the CLI's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import toy_env

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def quick_start() -> tuple[list[str], str]:
    text = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (bash,) = re.findall(r"(?ms)^```bash\n(.*?)^```$", text)
    (python,) = re.findall(r"(?ms)^```python\n(.*?)^```$", text)
    lines = [line.split("  #", 1)[0].strip() for line in bash.splitlines()]
    return [line for line in lines if line], python


def test_readme_quick_start_runs_as_written(tmp_path):
    commands, python = quick_start()
    assert all(c.startswith("cppo-bench ") for c in commands) and len(commands) <= 10
    env = toy_env()
    exe = shutil.which("cppo-bench")
    for command in commands:
        if exe is None:  # not installed as a script: the same entry point
            command = f"{sys.executable} -m cppo_bench" + command[len("cppo-bench") :]
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr
    assert (tmp_path / "reports" / "index.html").is_file()
    runs = list((tmp_path / "runs").rglob("manifest.json"))
    assert len(runs) == 1

    api_doc = (REPO / "docs" / "python-api.md").read_text()
    blocks = [python, *re.findall(r"(?ms)^```python\n(.*?)^```$", api_doc)]
    script = "\n\n".join(blocks) + (
        "\nimport json\n"
        "print('PASSK', json.dumps(cb.stats.pass_at_k(cb.load_runs('runs'), k=[1, 2])"
        "[['method', 'k', 'mean']].to_dict('records')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "AC" in done.stdout.splitlines()[0]
    # the Python run found the CLI's run complete: still one run, nothing generated anew
    assert len(list((tmp_path / "runs").rglob("manifest.json"))) == 1
    api = json.loads(done.stdout.split("PASSK ", 1)[1].splitlines()[0])
    cli = subprocess.run(
        [sys.executable, "-m", "cppo_bench", "stats", "passk", "--runs", "runs", "--k", "1,2",
         "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    want = [{"method": c["method"], "k": c["k"], "mean": c["mean"]} for c in json.loads(cli.stdout)]
    assert sorted(api, key=lambda r: r["k"]) == sorted(want, key=lambda r: r["k"])
