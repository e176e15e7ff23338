"""GPU smoke test: does every GPU path of the toolkit run? One command, offline, minutes.

    python benchmarks/gpu_smoke.py [--only NAME[,NAME]] [--keep DIR]

Every model is a tiny random checkpoint built from a config (tests/helpers/tiny_models.py,
tests/helpers/toy_task.py): no hub access. One line per check, then a closing count:

    PASS|FAIL|SKIP  name  seconds  peak-GiB  detail
    N passed, N failed, N skipped

A check that needs what this machine lacks (CUDA, a second GPU, DeepSpeed, vLLM) is SKIP with
the reason; on a CPU-only machine every check is SKIP. Exit status 1 when a check FAILs.
Run it from a checkout (it imports tests/ helpers). docs/gpu.md says what each check proves.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


# "cuda"; ``--device cpu`` runs the same checks on the CPU: a dry run of this script, which
# proves nothing about GPUs (the tests use it to keep the checks themselves working)
DEVICE = "cuda"


class Skip(Exception):
    """The check cannot run here; the message says why."""


CHECKS: dict[str, Callable[[Path], str]] = {}


def check(name: str) -> Callable[[Callable[[Path], str]], Callable[[Path], str]]:
    def register(fn: Callable[[Path], str]) -> Callable[[Path], str]:
        CHECKS[name] = fn
        return fn

    return register


def need_cuda(gpus: int = 1) -> None:
    import torch

    if DEVICE == "cpu" and gpus == 1:
        return
    if not torch.cuda.is_available():
        raise Skip("no CUDA device (torch.cuda.is_available() is False)")
    if torch.cuda.device_count() < gpus:
        raise Skip(f"needs {gpus} GPUs, this machine has {torch.cuda.device_count()}")


def need_module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        raise Skip(f"{name} is not installed")


def _uneven_requests() -> list[Any]:
    from cppo_bench.backends.base import GenRequest, SamplingParams

    words = ["one two three", "say the number", "print four five six seven", "plan solve"]
    return [
        GenRequest(
            SamplingParams(temperature=0.0, max_tokens=m, seed=i),
            messages=({"role": "user", "content": w},),
        )
        for i, (w, m) in enumerate(zip(words, (3, 9, 1, 6), strict=True))
    ]


def _hf_uneven(family: str, tmp: Path) -> str:
    need_cuda()
    from tiny_models import build

    from cppo_bench.backends import BACKENDS

    folder = build(family, tmp / family)
    reqs = _uneven_requests()
    texts = []
    for device in (DEVICE, "cpu"):
        backend = BACKENDS.get("hf")(str(folder), device=device, dtype="float32", batch_size=4)
        texts.append([r.text for r in backend.generate(reqs)])
        backend.close()
    if texts[0] != texts[1]:
        raise AssertionError(f"greedy {DEVICE} != cpu: {texts}")
    return f"{len(reqs)} rows, max_tokens 3/9/1/6, greedy equal to the CPU"


@check("hf-uneven-llama")
def hf_uneven_llama(tmp: Path) -> str:
    return _hf_uneven("llama", tmp)


@check("hf-uneven-qwen3_5")
def hf_uneven_qwen35(tmp: Path) -> str:
    return _hf_uneven("qwen3_5", tmp)


@check("train-pkpo")
def train_pkpo(tmp: Path) -> str:
    need_cuda()
    import torch
    from safetensors.torch import load_file
    from toy_task import run, toy_model_dir
    from transformers import AutoModelForCausalLM

    import trainers.core.grpo as grpo

    seen: list[tuple[Any, Any]] = []
    real = grpo.make_reference

    def spy(model: Any, dtype: Any = torch.bfloat16) -> Any:
        ref = real(model, dtype)
        seen.append((dtype, ref))
        return ref

    grpo.make_reference = spy
    try:
        model = toy_model_dir(tmp / "toy")
        out = tmp / "pkpo"
        run(out, model, algo="pkpo", steps=2, parity_reward=True, reference_dtype="bfloat16")
    finally:
        grpo.make_reference = real
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    if len(lines) != 2 or not all(math.isfinite(m["loss"]) for m in lines):
        raise AssertionError(f"loss not finite over 2 steps: {lines}")
    dtype, ref = seen[-1]
    ref_device = next(ref.parameters()).device
    if dtype != torch.bfloat16 or ref_device.type != DEVICE:
        raise AssertionError(f"reference is {dtype} on {ref_device}, not bf16 on {DEVICE}")
    after = load_file(str(out / "checkpoints" / "final" / "model.safetensors"))
    before = load_file(str(model / "model.safetensors"))
    moved = max(float((after[k] - before[k]).abs().max()) for k in before)
    if moved <= 0:
        raise AssertionError("parameters did not move")
    AutoModelForCausalLM.from_pretrained(out / "checkpoints" / "final")
    return f"loss {lines[-1]['loss']:.4f}, max |dtheta| {moved:.2e}, bf16 ref on {DEVICE}, reloads"


@check("train-offload")
def train_offload(tmp: Path) -> str:
    """Two pkpo steps with ``sharding: fsdp2_offload`` on one GPU (a 1-process mesh), against
    the same run without offload: the offloaded run's peak is the line's peak-GiB."""
    need_cuda()
    import torch
    from safetensors.torch import load_file
    from toy_task import run, toy_model_dir
    from transformers import AutoModelForCausalLM

    # on a GPU a ~130M-parameter policy (2 GiB of fp32 weights + grads + AdamW moments), so the
    # offload shows in the peak; the CPU dry run keeps the tiny toy policy
    wide = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8}
    wide |= {"num_attention_heads": 16, "num_key_value_heads": 4}
    model = toy_model_dir(tmp / "toy", **(wide if DEVICE == "cuda" else {}))
    opts = {"algo": "pkpo", "steps": 2, "parity_reward": True, "reference_dtype": "bfloat16"}
    peaks = []
    for name, layout in (("plain", "auto"), ("offload", "fsdp2_offload")):
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()  # the last reset: the line's peak is offload's
        run(tmp / name, model, sharding=layout, **opts)
        if torch.cuda.is_available():
            peaks.append(torch.cuda.max_memory_allocated() / 2**30)
    out = tmp / "offload"
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    if len(lines) != 2 or not all(math.isfinite(m["loss"]) for m in lines):
        raise AssertionError(f"loss not finite over 2 steps: {lines}")
    layout = json.loads((out / "train_manifest.json").read_text())["topology"]["sharding"]
    pinned = torch.cuda.is_available()
    if layout.get("offload") != "cpu" or layout.get("pinned") is not pinned:
        raise AssertionError(f"offload not applied: {layout}")
    after = load_file(str(out / "checkpoints" / "final" / "model.safetensors"))
    plain = load_file(str(tmp / "plain" / "checkpoints" / "final" / "model.safetensors"))
    gap = max(float((after[k] - plain[k]).abs().max()) for k in plain)
    AutoModelForCausalLM.from_pretrained(out / "checkpoints" / "final")
    n = sum(t.numel() for t in plain.values())
    mem = f", peak {peaks[1]:.2f} GiB vs {peaks[0]:.2f} without offload" if peaks else ""
    return f"{n / 1e6:.2f}M params, max |offload - plain| {gap:.1e}{mem}, pinned {pinned}, reloads"


def _on_cuda(module: Any, what: str) -> None:
    devices = {p.device.type for p in module.parameters()}
    if devices != {DEVICE}:
        raise AssertionError(f"{what} parameters on {sorted(devices)}")


@check("cppo-sft")
def cppo_sft(tmp: Path) -> str:
    need_cuda()
    import torch
    from cppo_tiny import METHODS, problems
    from train_helpers import tiny_model_dir

    from cppo_bench.backends.hf import load_model
    from trainers.cppo_pipeline.sft import sft_rows, train_sft
    from trainers.cppo_pipeline.sft_funnel import SFTExample

    model, tok, _ = load_model(str(tiny_model_dir(tmp / "tiny")), dtype=torch.float32)
    model.to(DEVICE)
    examples = [SFTExample(p, tuple(METHODS[p.problem_id][:2])) for p in problems()]
    losses = train_sft(model, sft_rows(tok, examples, 2), tok.pad_token_id or 0, epochs=1)
    _on_cuda(model, "planner")
    if not all(math.isfinite(x) for x in losses):
        raise AssertionError(f"SFT losses {losses}")
    return f"{len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}"


@check("cppo-rm")
def cppo_rm(tmp: Path) -> str:
    need_cuda()
    from cppo_tiny import METHODS, problems
    from train_helpers import tiny_model_dir

    from trainers.cppo_pipeline import reward_model as rmod
    from trainers.cppo_pipeline.negatives import LabelledTuple, make_negatives

    cfg = rmod.RMConfig(kind="generative", model=str(tiny_model_dir(tmp / "tiny")), epochs=1)
    rm = rmod.RM_KINDS.get("generative").create(cfg)
    pos = [LabelledTuple(p, tuple(METHODS[p.problem_id][:2]), 1, "rules") for p in problems()]
    losses = rmod.fit(rm, pos + make_negatives(pos), cfg)
    _on_cuda(rm.module, "reward model")
    return f"{len(losses)} steps, loss {losses[-1]:.3f}"


@check("cppo-audit")
def cppo_audit(tmp: Path) -> str:
    need_cuda()
    from cppo_stage_fixture import prepared

    import trainers.cppo_pipeline.stage_rl as stage_rl
    from trainers.cppo_pipeline.stages import PipelineStop, run_stages

    devices: list[str] = []
    real = stage_rl.HFRollout

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, model: Any, *args: Any, **kwargs: Any) -> None:
            devices.append(next(model.parameters()).device.type)
            super().__init__(model, *args, **kwargs)

    stage_rl.HFRollout = Spy
    out, inputs = prepared(tmp, "warmup")
    try:
        stages = {
            "sft": None,
            "rm": None,
            "warmup": None,
            "audit": lambda ctx: stage_rl.stage_audit(ctx, inputs),
        }
        run_stages(out, stages, ["audit"], {})  # type: ignore[arg-type]
        verdict = "passed"
    except PipelineStop as stop:  # a random policy may fail the audit: the stage still ran
        verdict = f"stopped ({str(stop)[:60]})"
    finally:
        stage_rl.HFRollout = real
    if devices != [DEVICE]:
        raise AssertionError(f"audit policy on {devices}")
    return f"policy on {DEVICE}, audit {verdict}"


def _launch(tmp: Path, launcher: list[str], extra: list[str]) -> str:
    from toy_task import toy_model_dir

    out = tmp / "run"
    cmd = [
        *launcher,
        str(REPO / "tests" / "helpers" / "toy_task.py"),
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


@check("fsdp2-step")
def fsdp2_step(tmp: Path) -> str:
    need_cuda(2)
    need_module("accelerate")
    launch = ["accelerate", "launch", "--use_fsdp", "--num_processes", "2"]
    return _launch(tmp, launch, ["--set", "sharding=auto"]) + " (FSDP2 by the engine)"


@check("zero3-step")
def zero3_step(tmp: Path) -> str:
    need_cuda()
    need_module("deepspeed")
    n = str(min(2, __import__("torch").cuda.device_count()))
    launch = ["accelerate", "launch", "--use_deepspeed", "--zero_stage", "3"]
    launch += ["--zero3_save_16bit_model", "true", "--num_processes", n]
    return _launch(tmp, launch, ["--set", "sharding=none"])


@check("vllm-sync")
def vllm_sync(tmp: Path) -> str:
    need_cuda()
    need_module("vllm")
    import torch
    from train_helpers import tiny_model_dir
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import ROLLOUT_ENGINES, HFRollout, RolloutRequest

    folder = tiny_model_dir(tmp / "tiny", head_dim=32)
    tok = AutoTokenizer.from_pretrained(folder)
    policy = AutoModelForCausalLM.from_pretrained(folder).to("cuda")
    options = {"model_path": str(folder), "gpu_memory_utilization": 0.2, "enforce_eager": True}
    engine = ROLLOUT_ENGINES.get("vllm")(policy, tok, options)
    with torch.no_grad():  # new weights: the engine must follow them after the sync
        for p in policy.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    engine.sync(policy)
    prob = Problem("toy", "p", "s", (Test("", ""),), "lcb")
    reqs = [RolloutRequest(prob, seed=i, prompt=f"say {i} " * 3) for i in range(4)]
    sampling = SamplingParams(temperature=1e-4, top_p=1.0, max_tokens=8)
    got = [r.completion_ids for r in engine.generate(reqs, sampling)]
    want = [r.completion_ids for r in HFRollout(policy, tok).generate(reqs, sampling)]
    engine.close()
    if got != want:
        raise AssertionError(f"vLLM after sync {got} != HF {want}")
    return "greedy vLLM == HF after an in-place sync"


def run_check(name: str, fn: Callable[[Path], str], keep: Path | None) -> tuple[str, str]:
    tmp = Path(tempfile.mkdtemp(prefix=f"gpu-smoke-{name}-", dir=keep))
    peak = "-"
    start = time.perf_counter()
    try:
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
        except ImportError:
            pass
        detail, status = fn(tmp), "PASS"
    except Skip as why:
        detail, status = str(why), "SKIP"
    except Exception as exc:  # a check's failure is one line; the next check still runs
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {str(exc)[:200]} ({Path(tb.filename).name}:{tb.lineno})"
        status = "FAIL"
    seconds = time.perf_counter() - start
    try:
        import torch

        if status != "SKIP" and torch.cuda.is_available():
            peak = f"{torch.cuda.max_memory_allocated() / 2**30:.2f}"
    except ImportError:
        pass
    if keep is None:
        shutil.rmtree(tmp, ignore_errors=True)
    line = f"{status} {name} {seconds:.1f}s {peak} {detail}".replace("\n", " ")
    return status, line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated check names")
    ap.add_argument("--keep", type=Path, default=None, help="keep each check's folder here")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    global DEVICE
    DEVICE = args.device
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    names = [n for n in args.only.split(",") if n] or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"unknown check {unknown[0]!r}; known: {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for name in names:
        status, line = run_check(name, CHECKS[name], args.keep)
        counts[status] += 1
        print(line, flush=True)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
