"""Help text and hints the commands share: registered names in full, and a hint for a flag
another harness spells (lm-eval, LiveCodeBench) that this one spells differently."""

from __future__ import annotations

from typing import Any

# another harness's flag -> how to say it here (click's "No such option" gets this appended)
FOREIGN_FLAGS: dict[str, str] = {
    "--model_args": "lm-eval's --model_args is --model NAME plus -b KEY=VALUE backend options "
    "here, e.g. --model Qwen/Qwen2.5-7B-Instruct -b dtype=bfloat16",
    "--gen_kwargs": "lm-eval's --gen_kwargs are --temperature, --top-p and --max-tokens here",
    "--tasks": "lm-eval's --tasks is --bench here (see `cppo-bench data list`)",
    "--log_samples": "every run keeps its samples; read them with `cppo-bench samples --run DIR`",
    "--scenario": "LiveCodeBench's --scenario codegeneration is --bench lcb here",
}


def names(registry: Any) -> str:
    """Every registered name, then the aliases (help text: never a trailing '...')."""
    aliases = ", ".join(f"{a}={n}" for a, n in sorted(registry.aliases().items()))
    return ", ".join(registry.names()) + (f" (aliases: {aliases})" if aliases else "")


def foreign_hint(option: str | None) -> str | None:
    """The hint for an unknown option another harness uses (`--model_args=x` too)."""
    if not option:
        return None
    return FOREIGN_FLAGS.get(option.split("=", 1)[0])
