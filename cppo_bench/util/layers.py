"""The house plan of `cppo_bench`: its layers, bottom first. A unit (a top-level module or
sub-package) imports its own layer or lower ones, never a higher one.
tests/structure/test_bench_layers.py holds the code to it, and docs/concepts.md draws it
(generated: `python -m cppo_bench.cli.reference --write`)."""

from __future__ import annotations

LAYERS: list[tuple[str, ...]] = [
    ("errors", "util", "files"),
    ("problem", "plan"),
    ("benchmarks", "prompts", "backends", "verifier"),
    ("methods",),
    ("store",),
    ("metrics", "diversity", "decontam"),
    ("augment",),
    ("runner", "lm_eval_tasks", "serve"),
    ("stats", "report"),
    ("api",),
    ("__init__",),
    ("cli",),
    ("__main__",),
]


def drawn() -> str:
    """The table as docs/concepts.md shows it (one line a layer, its number first)."""
    return "\n".join(f"{i:2d} | {', '.join(units)}" for i, units in enumerate(LAYERS))
