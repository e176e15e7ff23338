"""The generative reward model's base model: which one, and whether it loads on this node.

``--rm-model`` wins, then ``rm.model``; unset, a GPU run takes the study's p_psi base
(``rm.gpu_model``, a hub id) and a CPU run the embedded model. The RM stage loads it hours
into a pipeline (after the SFT stage), so a hub id that is not on this node (an offline node,
a cache without it) used to fail there; ``check`` says so in one line before any stage runs,
with what to do. Nothing is downloaded here.
"""

from __future__ import annotations

from pathlib import Path

from trainers.cppo_pipeline.config import RMStageConfig
from trainers.harness import quote


def resolve(rm_model: str | None, c: RMStageConfig, cuda: bool) -> str | None:
    """The base the rm stage loads (None: the embedded default model)."""
    model = rm_model or c.model
    if model is None and cuda:
        model = c.gpu_model  # the study's ~0.8B-class verifier where a GPU can train it
    return model


def problem(model: str | None) -> str | None:
    """One line when ``model`` would not load without the network, else None: the embedded
    model, a local folder or file, and a hub id in the Hugging Face cache all load."""
    if model is None or Path(model).expanduser().exists():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model, "config.json")
    except (ImportError, ValueError):  # not a repo id at all
        cached = None
    if isinstance(cached, str):
        return None
    return (
        f"rm: base model {quote(model, 80)} is neither a local folder nor in the Hugging Face "
        "cache, and the rm stage would fail loading it after the sft stage; download it "
        "first (huggingface-cli download ID), or pass --rm-model FOLDER, or --rm ngram"
    )
