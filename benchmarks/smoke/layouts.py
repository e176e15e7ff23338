"""Multi-process layouts, launched as a user would: FSDP2 over 2 GPUs, DeepSpeed ZeRO-3."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from benchmarks.smoke.base import REPO, check, need_cuda, need_module


def _launch(tmp: Path, launcher: list[str], extra: list[str]) -> str:
    from benchmarks.fixtures.toy_task import toy_model_dir

    out = tmp / "run"
    cmd = [
        *launcher,
        str(REPO / "benchmarks" / "fixtures" / "toy_task.py"),
        str(out),
        "--model",
        str(toy_model_dir(tmp / "toy")),
        "--steps",
        "1",
        "--parity-reward",
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=420)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr.strip().splitlines()[-1][:200] if proc.stderr else "rc")
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return f"1 step, loss {json.loads(lines[-1])['loss']:.4f}"


@check("fsdp2-step", "one FSDP2 step over 2 GPUs (accelerate launch)")
def fsdp2_step(tmp: Path) -> str:
    need_cuda(2)
    need_module("accelerate")
    launch = ["accelerate", "launch", "--use_fsdp", "--num_processes", "2"]
    return _launch(tmp, launch, ["--set", "sharding=auto"]) + " (FSDP2 by the engine)"


@check("zero3-step", "one DeepSpeed ZeRO-3 step (accelerate launch)")
def zero3_step(tmp: Path) -> str:
    need_cuda()
    need_module("deepspeed")
    n = str(min(2, __import__("torch").cuda.device_count()))
    launch = ["accelerate", "launch", "--use_deepspeed", "--zero_stage", "3"]
    launch += ["--zero3_save_16bit_model", "true", "--num_processes", n]
    return _launch(tmp, launch, ["--set", "sharding=none"])
