"""benchmarks/gpu_smoke.py on the CPU: every GPU check is SKIP with its reason, and the
checks themselves still run (a CPU dry run of three of them)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tests_paths import REPO, toy_env

torch = pytest.importorskip("torch")
SCRIPT = str(REPO / "benchmarks" / "gpu_smoke.py")
LINE = re.compile(r"^(PASS|FAIL|SKIP) (\S+) (\d+\.\d)s (-|\d+\.\d\d) (.+)$")


def _run(*args: str) -> tuple[int, list[str]]:
    proc = subprocess.run(
        [sys.executable, SCRIPT, *args],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [x for x in proc.stdout.splitlines() if LINE.match(x) or " passed, " in x]
    return proc.returncode, lines


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the checks for real")
def test_every_gpu_check_is_skip_with_its_reason_on_the_cpu() -> None:
    rc, lines = _run()
    checks, closing = lines[:-1], lines[-1]
    names = [LINE.match(x).group(2) for x in checks]  # type: ignore[union-attr]
    assert {"hf-uneven-llama", "hf-uneven-qwen3_5", "train-pkpo", "cppo-sft", "cppo-rm"} <= set(
        names
    )
    assert {"cppo-audit", "fsdp2-step", "zero3-step", "vllm-sync", "train-offload"} <= set(names)
    for line in checks:
        status, name, _, peak, why = LINE.match(line).groups()  # type: ignore[union-attr]
        assert status == "SKIP" and peak == "-", line
        assert why.strip(), line  # a reason
    assert any("no CUDA device" in x for x in checks)
    assert closing == f"0 passed, 0 failed, {len(checks)} skipped"
    assert rc == 0


def test_the_checks_themselves_run_as_a_cpu_dry_run() -> None:
    rc, lines = _run("--device", "cpu", "--only", "hf-uneven-qwen3_5,train-pkpo,train-offload")
    assert [x.split()[0] for x in lines[:-1]] == ["PASS", "PASS", "PASS"], lines
    assert lines[-1] == "3 passed, 0 failed, 0 skipped" and rc == 0


def test_an_unknown_check_is_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--only", "nope"],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "nope" in proc.stderr
