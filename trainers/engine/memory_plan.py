"""Per-stage GPU memory estimates: a pure function of the config and the model's config.json.

What ``cppo-bench train --dry-run`` prints and the preflight compares with the card before any
stage starts (docs/gpu.md "Memory per stage" derives every term). Bytes per GPU, fp32
training (the study's setting):

* state: weights 4 B + gradients 4 B + AdamW's two moments 8 B = 16 B/param, divided over the
  processes under FSDP2; under offload only the root unit (embeddings, head) and two decoder
  layers' weights and gradients (8 B/param) are on the GPU.
* reference: the frozen policy copy at ``reference_dtype`` when a KL weight is > 0.
* activations per micro-batch of B rows x T tokens: with checkpointing each layer keeps its
  input (T x H x 4 B a row) plus one layer's full set while it is recomputed; without, every
  layer keeps ~(6 H + 3 I) values a token.
* logits: chunked (``logits_chunk_tokens`` N > 0) ~4 x N x V x 4 B whatever B and T are;
  unchunked ~3 x B x C x V x 4 B over the C trained positions.
* vLLM: ``vllm_gpu_memory_utilization`` x the card while it samples; with ``vllm_sleep`` not
  during the update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
PROMPT_TOKENS = 1024  # a training prompt as the estimates assume it (the study's are shorter)


@dataclass(frozen=True)
class Shape:
    """What the estimates read from a config.json (a composite's text config)."""

    vocab: int
    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool
    # Qwen3.5's gated-delta-net layers: (key heads, value heads, key dim, value dim, kernel)
    linear: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    linear_layers: int = 0
    gated_attention: bool = False  # Qwen3.5's full attention doubles q_proj (an output gate)


def shape_of(config: Mapping[str, Any]) -> Shape:
    """The Shape of a config.json's dict; one ValueError naming the missing key."""
    text = config.get("text_config")
    cfg = {**config, **text} if isinstance(text, Mapping) else dict(config)
    need = ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size")
    sizes = [k for k in cfg if k in need or k.endswith(("_heads", "_dim"))]
    bad = [k for k in need if k not in cfg] + [
        k for k in sizes if cfg[k] is not None and (type(cfg[k]) is not int or cfg[k] < 0)
    ]  # a stranger's file: every size a non-negative int (bool is not one)
    if bad:
        raise ValueError(f"model config: {bad[0]} is not a non-negative integer")
    heads = int(cfg.get("num_attention_heads") or 1)
    types = list(cfg.get("layer_types") or [])
    linear_layers = sum(1 for t in types if t == "linear_attention")
    linear = (
        int(cfg.get("linear_num_key_heads") or 0),
        int(cfg.get("linear_num_value_heads") or 0),
        int(cfg.get("linear_key_head_dim") or 0),
        int(cfg.get("linear_value_head_dim") or 0),
        int(cfg.get("linear_conv_kernel_dim") or 0),
    )
    return Shape(
        vocab=cfg["vocab_size"],
        hidden=cfg["hidden_size"],
        layers=cfg["num_hidden_layers"],
        intermediate=cfg["intermediate_size"],
        heads=heads,
        kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_dim=int(cfg.get("head_dim") or cfg["hidden_size"] // heads),
        tied=bool(config.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))),
        linear=linear,
        linear_layers=linear_layers,
        gated_attention=str(cfg.get("model_type", "")).startswith("qwen3_5"),
    )


def layer_params(s: Shape, linear: bool) -> int:
    """One decoder layer: its attention (full or gated delta net), the SwiGLU MLP, 2 norms."""
    h = s.hidden
    if linear:
        nk, nv, dk, dv, kernel = s.linear
        qkv = 2 * nk * dk + nv * dv
        mixer = h * (qkv + nv * dv) + h * 2 * nv + qkv * kernel + nv * dv * h + 2 * nv + dv
    else:
        q = s.heads * s.head_dim * (2 if s.gated_attention else 1)
        mixer = h * q + 2 * h * s.kv_heads * s.head_dim + s.heads * s.head_dim * h
        mixer += 2 * s.head_dim if s.gated_attention else 0  # q / k norms
    return mixer + 3 * h * s.intermediate + 2 * h


def param_count(s: Shape) -> int:
    """Trainable parameters of the text model with its head (a Llama's exactly)."""
    root = s.vocab * s.hidden * (1 if s.tied else 2) + s.hidden  # embeddings, head, final norm
    full = s.layers - s.linear_layers
    return root + full * layer_params(s, False) + s.linear_layers * layer_params(s, True)


@dataclass(frozen=True)
class Estimate:
    stage: str
    layout: str
    parts: dict[str, int] = field(default_factory=dict)  # bytes per GPU at the stage's peak
    host: int = 0  # bytes of host memory the layout moves off the GPU

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def line(self) -> str:
        parts = ", ".join(f"{k} {v / GIB:.1f}" for k, v in self.parts.items() if v)
        host = f"; host {self.host / GIB:.1f} GiB" if self.host else ""
        return f"{self.stage}: {self.layout}: {self.total / GIB:.1f} GiB/GPU ({parts}){host}"


def state_bytes(s: Shape, layout: str, world: int) -> tuple[int, int]:
    """(GPU, host) bytes of fp32 weights + gradients + AdamW moments under ``layout``."""
    p = param_count(s)
    if layout == "fsdp2":
        unit = layer_params(s, False)  # the all-gathered unit and its prefetched neighbour
        return 16 * p // max(world, 1) + 2 * 8 * unit, 0
    if layout == "fsdp2_offload":
        root = s.vocab * s.hidden * (1 if s.tied else 2)
        return 8 * root + 2 * 8 * layer_params(s, False), 16 * p
    return 16 * p, 0


def activation_bytes(s: Shape, rows: int, tokens: int, checkpointing: bool) -> int:
    per_layer = (6 * s.hidden + 3 * s.intermediate) * rows * tokens * 4
    if checkpointing:
        return s.layers * s.hidden * rows * tokens * 4 + per_layer
    return s.layers * per_layer


def logits_bytes(s: Shape, rows: int, trained: int, chunk: int) -> int:
    return 4 * chunk * s.vocab * 4 if chunk > 0 else 3 * rows * trained * s.vocab * 4


def training(
    stage: str,
    s: Shape,
    *,
    layout: str,
    world: int,
    rows: int,
    tokens: int,
    trained: int,
    checkpointing: bool,
    chunk: int,
    reference_bytes: int = 0,
    vllm_bytes: int = 0,
    vllm_sleep: bool = False,
) -> Estimate:
    """A stage that trains: the larger of its update phase and its rollout phase."""
    gpu, host = state_bytes(s, layout, world)
    update = {
        "state": gpu,
        "reference": reference_bytes,
        "activations": activation_bytes(s, rows, tokens, checkpointing),
        "logits": logits_bytes(s, rows, trained, chunk),
        "vllm": 0 if vllm_sleep else vllm_bytes,
    }
    rollout = {"state": gpu, "reference": reference_bytes, "vllm": vllm_bytes}
    if not vllm_bytes and layout.startswith("fsdp2"):  # hf rollouts gather the fp32 policy
        rollout["gathered policy"] = 4 * param_count(s)
    peak = max((update, rollout), key=lambda d: sum(d.values()))
    name = f"{layout}{' x' + str(world) if world > 1 else ''}"
    name += ", checkpointing" if checkpointing else ""
    name += f", logits chunk {chunk}" if chunk else ", full logits"
    return Estimate(stage, name, peak, host)


def resolved_layout(sharding: str, world: int) -> str:
    """The engine's layout for ``sharding`` (auto: FSDP2 with several processes, else none;
    an ``accelerate launch --use_fsdp`` is what really picks it, which a dry run cannot see)."""
    if sharding == "auto":
        return "fsdp2" if world > 1 else "none"
    return sharding


def rl_estimate(
    stage: str, s: Shape, engine: Any, world: int, card: int, extra_tokens: int = 0
) -> Estimate:
    """The engine's RL update (warm-up, joint, pkpo, ...): its configured layout."""
    tokens = PROMPT_TOKENS + extra_tokens + engine.max_tokens
    ref = DTYPE_BYTES[engine.reference_dtype] * param_count(s) if engine.uses_reference else 0
    vllm = int(engine.vllm_gpu_memory_utilization * card) if engine.rollout_engine == "vllm" else 0
    return training(
        stage, s, layout=resolved_layout(engine.sharding, world), world=world,
        rows=engine.micro_batch_rows, tokens=tokens, trained=engine.max_tokens + extra_tokens,
        checkpointing=engine.gradient_checkpointing, chunk=engine.logits_chunk_tokens,
        reference_bytes=ref, vllm_bytes=vllm, vllm_sleep=engine.vllm_sleep,
    )  # fmt: skip


def sft_estimate(s: Shape, engine: Any, batch: int, tokens: int, trained: int) -> Estimate:
    """CPPO's SFT stage (trainers/cppo_pipeline/sft.py ``SFTLayout``): on the main process
    alone, in micro-batches of ``micro_batch_rows``, chunked planner logits, checkpointing as
    the engine section says, FSDP2 offload on one process when ``sharding`` asks for it."""
    offload = engine.sharding == "fsdp2_offload"
    rows = min(batch, engine.micro_batch_rows) if engine.micro_batch_rows > 0 else batch
    est = training(
        "sft", s, layout="fsdp2_offload" if offload else "none (main process)", world=1,
        rows=rows, tokens=tokens, trained=trained,
        checkpointing=engine.gradient_checkpointing, chunk=engine.logits_chunk_tokens,
    )  # fmt: skip
    # before training, the stage samples its candidates with the whole fp32 policy on the GPU
    named = {
        ("candidate sampling" if k == "gathered policy" else k): v for k, v in est.parts.items()
    }
    return Estimate(est.stage, est.layout, named, est.host)


def rm_estimate(s: Shape, engine: Any, batch: int, tokens: int) -> Estimate:
    """The generative RM's fit (reward_model.py): plain AdamW on the main process, the head
    only where a row ends (a (B, <=B, V) logits tensor and its gradient), checkpointing as
    the engine section says."""
    est = training(
        "rm", s, layout="none (main process)", world=1, rows=batch, tokens=tokens, trained=1,
        checkpointing=engine.gradient_checkpointing, chunk=0,
    )  # fmt: skip
    parts = {**est.parts, "logits": 2 * batch * min(batch, tokens) * s.vocab * 4}
    return Estimate(est.stage, est.layout.replace("full logits", "last-position logits"), parts)


def state_save_bytes(s: Shape) -> int:
    """A resumable state (fp32 weights + both moments, 12 B/param) plus an HF folder (4 B)."""
    return 16 * param_count(s)
