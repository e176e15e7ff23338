"""`cppo-bench model`: the embedded default model (SmolLM2-135M-Instruct) as a plain Hugging
Face folder, for any tool that takes a model path."""

from __future__ import annotations

from pathlib import Path


def default_model_path() -> Path:
    """The embedded model's Hugging Face folder, built on first use (quietly: no loader
    progress bars); give it to lm-eval's pretrained=, vLLM or transformers."""
    from cppo_bench.backends.default_model import ensure_default_model, quiet_loading

    with quiet_loading():
        return Path(ensure_default_model())
