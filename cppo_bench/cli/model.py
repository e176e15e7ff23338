"""`cppo-bench model`: the embedded default model as a plain Hugging Face folder."""

from __future__ import annotations

import click

from cppo_bench.util.termsafe import echo


@click.group("model")
def model() -> None:
    """The embedded default model (SmolLM2-135M-Instruct)."""


@model.command("path")
def path() -> None:
    """Print the embedded model's Hugging Face folder, building it on first use; give it to
    any tool that takes a model path (lm-eval's pretrained=, vLLM, transformers)."""
    from cppo_bench.backends.default_model import ensure_default_model, quiet_loading

    with quiet_loading():
        folder = ensure_default_model()
    echo(str(folder))
