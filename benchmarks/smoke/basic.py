"""hf backends on the GPU, one-process training (plain and offloaded), CPPO's data stages."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from unittest.mock import patch

from benchmarks.smoke.base import check, device, need_cuda


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
    from benchmarks.fixtures.tiny_models import build
    from cppo_bench.backends import BACKENDS

    folder = build(family, tmp / family)
    reqs = _uneven_requests()
    texts = []
    for where in (device(), "cpu"):
        backend = BACKENDS.get("hf")(str(folder), device=where, dtype="float32", batch_size=4)
        texts.append([r.text for r in backend.generate(reqs)])
        backend.close()
    if texts[0] != texts[1]:
        raise AssertionError(f"greedy {device()} != cpu: {texts}")
    return f"{len(reqs)} rows, max_tokens 3/9/1/6, greedy equal to the CPU"


@check("hf-uneven-llama", "hf backend: uneven greedy rows on the GPU equal the CPU (Llama)")
def hf_uneven_llama(tmp: Path) -> str:
    return _hf_uneven("llama", tmp)


@check("hf-uneven-qwen3_5", "hf backend: the same for a Qwen3.5 (gated delta net) model")
def hf_uneven_qwen35(tmp: Path) -> str:
    return _hf_uneven("qwen3_5", tmp)


@check("train-pkpo", "2 PKPO steps: finite loss, bf16 reference on the GPU, reloads")
def train_pkpo(tmp: Path) -> str:
    need_cuda()
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    import trainers.core.grpo as grpo
    from benchmarks.fixtures.toy_task import run, toy_model_dir

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
    if dtype != torch.bfloat16 or ref_device.type != device():
        raise AssertionError(f"reference is {dtype} on {ref_device}, not bf16 on {device()}")
    after = load_file(str(out / "checkpoints" / "final" / "model.safetensors"))
    before = load_file(str(model / "model.safetensors"))
    moved = max(float((after[k] - before[k]).abs().max()) for k in before)
    if moved <= 0:
        raise AssertionError("parameters did not move")
    AutoModelForCausalLM.from_pretrained(out / "checkpoints" / "final")
    return (
        f"loss {lines[-1]['loss']:.4f}, max |dtheta| {moved:.2e}, bf16 ref on {device()}, reloads"
    )


@check("train-offload", "fsdp2_offload on one GPU matches the plain run; peak memory")
def train_offload(tmp: Path) -> str:
    """Two pkpo steps with ``sharding: fsdp2_offload`` on one GPU (a 1-process mesh), against
    the same run without offload: the offloaded run's peak is the line's peak-GiB."""
    need_cuda()
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from benchmarks.fixtures.toy_task import run, toy_model_dir

    # on a GPU a ~130M-parameter policy (2 GiB of fp32 weights + grads + AdamW moments), so the
    # offload shows in the peak; the CPU dry run keeps the tiny toy policy
    wide = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8}
    wide |= {"num_attention_heads": 16, "num_key_value_heads": 4}
    model = toy_model_dir(tmp / "toy", **(wide if device() == "cuda" else {}))
    opts: dict[str, Any] = {"algo": "pkpo", "steps": 2, "parity_reward": True}
    opts["reference_dtype"] = "bfloat16"
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
    if devices != {device()}:
        raise AssertionError(f"{what} parameters on {sorted(devices)}")


@check("cppo-sft", "CPPO SFT trains the planner on the GPU")
def cppo_sft(tmp: Path) -> str:
    need_cuda()
    import torch

    from benchmarks.fixtures.cppo_tiny import METHODS, problems
    from benchmarks.fixtures.tiny_models import tiny_model_dir
    from cppo_bench.backends.hf import load_model
    from trainers.cppo_pipeline.sft import sft_rows, train_sft
    from trainers.cppo_pipeline.sft_funnel import SFTExample

    model, tok, _ = load_model(str(tiny_model_dir(tmp / "tiny")), dtype=torch.float32)
    model.to(device())
    examples = [SFTExample(p, tuple(METHODS[p.problem_id][:2])) for p in problems()]
    losses = train_sft(model, sft_rows(tok, examples, 2), tok.pad_token_id or 0, epochs=1)
    _on_cuda(model, "planner")
    if not all(math.isfinite(x) for x in losses):
        raise AssertionError(f"SFT losses {losses}")
    return f"{len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}"


@check("cppo-rm", "CPPO generative RM trains on the GPU")
def cppo_rm(tmp: Path) -> str:
    need_cuda()
    from benchmarks.fixtures.cppo_tiny import METHODS, problems
    from benchmarks.fixtures.tiny_models import tiny_model_dir
    from trainers.cppo_pipeline import reward_model as rmod
    from trainers.cppo_pipeline.negatives import LabelledTuple, make_negatives

    cfg = rmod.RMConfig(kind="generative", model=str(tiny_model_dir(tmp / "tiny")), epochs=1)
    rm = rmod.RM_KINDS.get("generative").create(cfg)
    pos = [LabelledTuple(p, tuple(METHODS[p.problem_id][:2]), 1, "rules") for p in problems()]
    losses = rmod.fit(rm, pos + make_negatives(pos), cfg)
    _on_cuda(rm.module, "reward model")
    return f"{len(losses)} steps, loss {losses[-1]:.3f}"


@check("cppo-audit", "CPPO audit stage puts its policy on the GPU")
def cppo_audit(tmp: Path) -> str:
    need_cuda()
    import trainers.cppo_pipeline.stage_rl as stage_rl
    from benchmarks.fixtures.cppo_stage_fixture import prepared
    from trainers.cppo_pipeline.stages import PipelineStop, run_stages

    devices: list[str] = []

    class Spy(stage_rl.HFRollout):
        def __init__(self, model: Any, *args: Any, **kwargs: Any) -> None:
            devices.append(next(model.parameters()).device.type)
            super().__init__(model, *args, **kwargs)

    out, inputs = prepared(tmp, "warmup")
    stages = {
        "sft": None,
        "rm": None,
        "warmup": None,
        "audit": lambda ctx: stage_rl.stage_audit(ctx, inputs),
    }
    try:
        with patch.object(stage_rl, "HFRollout", Spy):  # (the real one is back after)
            run_stages(out, stages, ["audit"], {})  # type: ignore[arg-type]
        verdict = "passed"
    except PipelineStop as stop:  # a random policy may fail the audit: the stage still ran
        verdict = f"stopped ({str(stop)[:60]})"
    if devices != [device()]:
        raise AssertionError(f"audit policy on {devices}")
    return f"policy on {device()}, audit {verdict}"
