"""`TrainRequest`: every setting of one training job, the config `cppo-bench train` builds and
`trainers.api.train` takes (docs/options.md lists its fields beside the flags that set them).

A request is what the user asked for; the recipe's typed config (`TrainConfig`, CPPO's
sections) is resolved from it (defaults <- preset <- ``config`` file <- ``overrides``) by
`trainers.api.resolve`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainers.harness import required, setting


@dataclass(frozen=True)
class TrainRequest:
    """Every setting of `cppo-bench train ALGO` / `trainers.train`."""

    algo: str = required("Training algorithm: cppo, pkpo, passk_rl or upskill.")
    config: str | None = setting(
        None, "YAML preset of config keys over the study's defaults (sections for cppo)."
    )
    preset: Literal["auto", "study", "demo"] = setting(
        "auto", "demo: a few short CPU steps; auto = demo when neither --model nor --config."
    )
    model: str | None = setting(
        None, "Policy to train: HF folder, .gguf or hub id (default: embedded SmolLM2-135M)."
    )
    bench: str = setting(
        "demo_train",
        "Training set loader (demo_train, codecontests, apps, ... or a JSONL path via --data).",
    )
    data: str | None = setting(None, "Local copy for --bench (its train split).")
    split: str | None = setting(None, "Loader split (default: train where there is one).")
    eval_specs: tuple[str, ...] = setting(
        (),
        "Evaluation sets to decontaminate against, BENCH[=PATH] (default: demo and every "
        "other benchmark available offline).",
    )
    allow_overlap: bool = setting(
        False, "Keep training problems that overlap an evaluation set (still listed)."
    )
    out: str | None = setting(None, "Run folder (default: runs/train/ALGO-MODEL-seedS).")
    resume: bool = setting(False, "Continue the run in --out from its last state.")
    seed: int = setting(0, "Training seed.")
    stages: tuple[str, ...] = setting(
        (),
        "cppo: the stages to run (sft, rm, warmup, audit, joint; complete ones are skipped "
        "anyway); () = all.",
    )
    quiet: bool = setting(False, "No progress bar.")
    options: dict[str, Any] = setting(
        {}, "Recipe options: cppo's judge, rm_model, base_url (its judge server)."
    )
    overrides: dict[str, Any] = setting(
        {}, "Config keys over the preset and --config (nested mappings for cppo sections)."
    )
    gpu_memory: str | None = setting(
        None,
        "The card's memory for the preflight's estimates (80GiB, 141GB); default: the first "
        "CUDA device's, none on a CPU (memory then not compared).",
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """Stages as text ("sft,rm") are the list they name."""
        out = dict(values)
        if isinstance(out.get("stages"), str):
            from trainers.cppo_pipeline.pipeline import parse_stages

            out["stages"] = list(parse_stages(out["stages"]))  # one line naming the known
        return out
