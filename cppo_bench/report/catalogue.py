"""The study's tables and figures, named after its captions, and what fills each: the
first part of `cppo-bench report --check` (the missing-run commands follow it).

Tables and figures computed from runs come from the specs (their `study` key names the
study's caption); the rest of the study's tables and figures do not come from evaluation
runs and are listed in STATIC with where they come from instead.
"""

from __future__ import annotations

from typing import Any

# (kind, the study's caption, where it comes from) for what no spec computes from runs
STATIC: tuple[tuple[str, str, str], ...] = (
    ("Figure", "Overview of Coordinated Pass@K Policy Optimization", "a diagram, not data"),
    ("Table", "Comparison of CPPO with the closest planning and pass@K methods",
     "design axes, not data (docs/run.md: methods)"),
    ("Algorithm", "One CPPO update step (Stage 5); CPPO end-to-end training pipeline",
     "trainers/core (docs/training.md: trainer core)"),
    ("Table", "Stage-wise data sources; stage-wise data splits with problem counts",
     "cppo-bench decontam --train codecontests=... --eval apps=... --eval lcb=... --out decontam/"),
    ("Table", "Per-component exposure audit", "decontam/overlap.json of the same command"),
    ("Table", "Sandbox configuration used by the verifier",
     "cppo-bench verify (README: verifier; sandbox_images/README.md)"),
    ("Table", "Exact model checkpoints", "the run manifests: cppo-bench runs --runs runs/"),
    ("Figure", "Reward-model diagnostics (RM agreement, reward decomposition)",
     "cppo-bench train cppo: rm/val_scores.jsonl and joint/gate_log.jsonl of the pipeline; "
     "cppo-bench report draws ROC and heat map"),
    ("Figure", "PKPO training dynamics; UpSkill training dynamics",
     "the trainers' step logs (not drawn by this report)"),
)  # fmt: skip

SHOWN = 3  # commands listed per table here; the full list follows


def _commands(computed: Any, table_name: str) -> list[str]:
    prefix = f"{table_name}: "
    # a trained row's command needs its checkpoint first: commented out, as in --check's list
    return [
        f"fill: {m.command}" if m.trained is None else f"# fill (needs the checkpoint): {m.command}"
        for m in computed.missing
        if any(c.startswith(prefix) for c in m.cells)
    ]


def format_catalogue(computed: Any) -> str:
    """Every table and figure of the study with the spec that computes it and how to fill it."""
    lines = ["The study's tables and figures, and what fills each:", ""]
    for spec, table in zip(computed.specs, computed.tables, strict=True):
        names = spec.study or (spec.title,)
        cells = [c for _, _, c in table.cells()]
        empty = sum(c.empty for c in cells)
        lines.append(
            f'Table "{names[0]}" [{spec.name}]: {len(cells) - empty} of {len(cells)} cells filled'
        )
        lines += [f'    also the study\'s "{n}"' for n in names[1:]]
        cmds = _commands(computed, table.name)
        lines += [f"    {c}" for c in cmds[:SHOWN]]
        if len(cmds) > SHOWN:
            lines.append(f"    ... and {len(cmds) - SHOWN} more commands (listed below)")
        if not cmds and empty and spec.fill:
            lines.append(f"    fill: {spec.fill}")
        for fig in spec.figures:
            title = fig.get("study") or f"{spec.title} ({fig['kind']})"
            lines.append(
                f'Figure "{title}" [{spec.name}/{fig["kind"]}]: drawn from {spec.name}\'s runs'
            )
    lines += ["", "Not computed from evaluation runs:"]
    lines += [f'{kind} "{name}": {where}' for kind, name, where in STATIC]
    return "\n".join(lines) + "\n\n"
