"""Whole-job regressions (issue 43) that a unit test of one part could not see: CPPO's joint
stage with vLLM rollouts in sleep mode (planner and solver rollouts in one step), and two
steps with gradient checkpointing under a wrapper (DDP) with the hf rollouts. Each runs in a
fresh process with a time limit, so a hang is a FAIL line, not a smoke test that never ends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.smoke.base import REPO, check, device, need_cuda, need_module

# the joint stage of a prepared pipeline (sft, rm, warm-up and audit complete) for one step
_JOINT = """
import json, sys
from pathlib import Path
from benchmarks.fixtures.cppo_stage_fixture import prepared, settings
from benchmarks.fixtures.tiny_models import tiny_model_dir
from trainers.cppo_pipeline.stage_data import PipelineInputs
from trainers.cppo_pipeline.judge import RulesJudge
from trainers.cppo_pipeline.pipeline import run_pipeline
tmp = Path(sys.argv[1])
tiny_model_dir(tmp / "tiny", head_dim=64)  # vLLM's attention kernels: head_dim >= 32
out, inputs = prepared(tmp, "audit")
engine = {"rollout_engine": "vllm", "vllm_sleep": sys.argv[2] == "cuda",
          "vllm_gpu_memory_utilization": 0.2, "vllm_enforce_eager": True}
cfg = settings(engine=engine, joint={"phases": 1, "max_steps": 1})
inputs = PipelineInputs(inputs.problems, "tiny", str(tmp / "tiny"), RulesJudge(), cfg)
print(json.dumps(run_pipeline(out, inputs, ["joint"], echo=lambda s: None)))
"""


def _child(argv: list[str], timeout: int, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    try:
        proc = subprocess.run(
            argv, cwd=REPO, env=full, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"no result in {timeout} s: the job hangs") from None
    if proc.returncode != 0:
        raise AssertionError(f"rc {proc.returncode}: {_cause(proc.stderr)[:200]}")
    return proc.stdout


_EXCEPTION = re.compile(r"\b\w*(Error|Exception|Interrupt|Exit)\b: ")


def _cause(stderr: str) -> str:
    """The line of a failed child's stderr that says why: its last exception line (under
    torchrun a rank's `[rank0]: ValueError: ...`, not the launcher's ChildFailedError or its
    closing banner of `=`), else its last line that is not a banner."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip().strip("=-")]
    errors = [x for x in lines if _EXCEPTION.search(x) and "ChildFailedError" not in x]
    return (errors or lines or ["no output"])[-1]


@check("cppo-joint-sleep", "one CPPO joint step with vLLM rollouts and vllm_sleep (no hang)")
def cppo_joint_sleep(tmp: Path) -> str:
    """CPPO samples twice a step (planner, then solver) from the engine; with sleep mode the
    second call once waited forever for a scheduler that vLLM resumes only when every sleep
    tag is awake. 300 s is far above one tiny step."""
    need_cuda()
    need_module("vllm")
    _child([sys.executable, "-c", _JOINT, str(tmp), device()], timeout=300)
    metrics = (tmp / "pipe" / "joint").rglob("metrics.jsonl")
    steps = [json.loads(x) for f in metrics for x in f.read_text().splitlines() if x.strip()]
    if not steps:
        raise AssertionError("the joint stage wrote no step")
    return f"{len(steps)} joint step(s) with vllm_sleep, loss {steps[-1].get('loss', 'n/a')}"


@check("ckpt-wrapper", "2 steps, 2 processes (DDP), gradient checkpointing, hf rollouts", gpu=False)
def ckpt_wrapper(tmp: Path) -> str:
    """The toy task under ``torchrun --nproc_per_node 2`` with ``sharding: none`` (accelerate's
    DDP wrapper) and ``gradient_checkpointing: true``: the update once restored the training
    mode of the wrapper, not of the policy inside, so the step-2 rollouts ran in train mode and
    transformers 5.16-5.19's checkpointed layers dropped the KV cache (a shape error). On the
    CPU (gloo): two processes cannot share the one GPU of a lent machine under NCCL."""
    from benchmarks.fixtures.toy_task import toy_model_dir

    out = tmp / "run"
    model = toy_model_dir(tmp / "toy")
    # --standalone: a free rendezvous port of its own (the default 29500 collides with any
    # other job on the machine, e.g. a parallel test run: EADDRINUSE)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    argv += [str(REPO / "benchmarks" / "fixtures" / "toy_task.py"), str(out), "--model"]
    argv += [str(model), "--steps", "2", "--parity-reward", "--set", "sharding=none"]
    argv += ["--set", "gradient_checkpointing=true", "--set", "max_tokens=4"]
    cpu_only = {"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    _child(argv, timeout=300, env=cpu_only)
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    if len(steps) != 2:
        raise AssertionError(f"{len(steps)} steps, not 2")
    import transformers

    return f"2 steps, loss {steps[-1]['loss']:.4f} (transformers {transformers.__version__})"


@check("verifier", "the sandboxed verifier (the training checks' reward) judges here", gpu=False)
def verifier(tmp: Path) -> str:
    """A right and a wrong program against one test, and the isolation mode the verifier chose:
    under gVisor (a lent machine's kernel reports 4.4.0) namespaces may not behave, and the
    verifier falls back to a weaker mode, warning once; none working is this check's FAIL."""
    from cppo_bench.problem import Problem, Test
    from cppo_bench.verifier import VerifyJob, sandbox_mode, verify_batch

    prob = Problem("toy", "p", "add one", (Test("41\n", "42\n"),), "lcb", time_limit_s=5.0)
    jobs = [VerifyJob(prob, "print(int(input()) + 1)"), VerifyJob(prob, "print(0)")]
    got = [v.passed for v in verify_batch(jobs, workers=1)]
    if got != [True, False]:
        raise AssertionError(f"right / wrong program judged {got}, not [True, False]")
    return f"right program passes, wrong one fails; sandbox {sandbox_mode()}"


@check("preflight-4b", "the 4B study preset's per-stage estimates fit this card", gpu=False)
def preflight_4b(tmp: Path) -> str:
    """What `cppo-bench train cppo --model Qwen/Qwen3.5-4B --config
    trainers/configs/cppo.study-4b.yaml --dry-run` plans (shipped shapes, no weights), against
    this card's memory (80 GiB where there is none): a stage that does not fit is a FAIL."""
    from trainers.api import resolve
    from trainers.engine.memory_plan import GIB
    from trainers.preflight import build_plan, card_memory

    card = card_memory(None) or 80 * GIB
    preset = REPO / "trainers" / "configs" / "cppo.study-4b.yaml"
    cfg = resolve("cppo", config=preset, model="Qwen/Qwen3.5-4B").config
    plan = build_plan("cppo", cfg, "Qwen/Qwen3.5-4B", {}, card)
    memory = [p for p in plan.problems if p.startswith("stage ")]
    if memory or not plan.stages:
        raise AssertionError(memory[0] if memory else "no stage planned")
    peaks = ", ".join(f"{e.stage} {e.total / GIB:.0f}" for e in plan.stages)
    return f"GiB per GPU on a {card / GIB:.0f} GiB card: {peaks}"
