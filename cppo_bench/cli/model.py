"""`cppo-bench model`: the embedded default model as a plain Hugging Face folder
(cppo_bench.api.model)."""

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
    from cppo_bench.api.model import default_model_path

    echo(str(default_model_path()))
