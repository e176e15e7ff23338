"""benchmarks/gpu_smoke.py on the CPU: every GPU check is SKIP with its reason, the
CPU-runnable ones pass, --help lists every check, and the GPU checks themselves still run (a
CPU dry run of three of them)."""

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


GPU_CHECKS = {
    "hf-uneven-llama", "hf-uneven-qwen3_5", "train-pkpo", "train-offload", "cppo-sft",
    "cppo-rm", "cppo-audit", "fsdp2-step", "zero3-step", "vllm-sync", "ckpt-memory",
    "vllm-train", "vllm-close", "vllm-context-9b",
}  # fmt: skip
CPU_CHECKS = {"ckpt-recompute", "state-save"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the checks for real")
def test_gpu_checks_skip_with_their_reason_and_cpu_checks_pass_on_the_cpu() -> None:
    rc, lines = _run()
    checks, closing = lines[:-1], lines[-1]
    got = {LINE.match(x).group(2): LINE.match(x) for x in checks}  # type: ignore[union-attr]
    assert set(got) == GPU_CHECKS | CPU_CHECKS
    for name, m in got.items():
        status, _, _, peak, why = m.groups()
        assert status == ("PASS" if name in CPU_CHECKS else "SKIP"), m.string
        assert peak == "-" and why.strip(), m.string  # a reason, or what passed
        if name in GPU_CHECKS:
            assert "no CUDA device" in why, m.string
    assert "checkpointed" in got["ckpt-recompute"].group(5)  # the recomputation was counted
    assert closing == f"{len(CPU_CHECKS)} passed, 0 failed, {len(GPU_CHECKS)} skipped"
    assert rc == 0


def test_help_lists_every_check_with_what_it_needs() -> None:
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--help"], cwd=REPO, env=toy_env(), capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0
    for name in GPU_CHECKS | CPU_CHECKS:
        kind = "cpu" if name in CPU_CHECKS else "gpu"
        assert re.search(rf"^  {re.escape(name)} +{kind}  \S", proc.stdout, re.M), name


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
