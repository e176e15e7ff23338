"""Inference backends behind one small batched interface (see base.py), registered by name."""

from __future__ import annotations

from cppo_bench.backends.base import Backend, GenRequest, GenResult, SamplingParams
from cppo_bench.util.registry import Registry

# name -> factory(model: str | None, **options) -> Backend
BACKENDS: Registry = Registry(
    "backend",
    lazy={
        "hf": "cppo_bench.backends.hf:make_hf_backend",
        "vllm": "cppo_bench.backends.vllm:make_vllm_backend",
        "openai": "cppo_bench.backends.openai:make_openai_backend",
    },
)

__all__ = ["BACKENDS", "Backend", "GenRequest", "GenResult", "SamplingParams"]
