"""Training-dynamics figures of the trained baselines (study appendices "PKPO Training Dynamics"
and "UpSkill Training Dynamics"), drawn from training runs' logs only.

A training run is a folder ``<runs>/train/<name>/`` holding ``train_manifest.json`` (``algorithm``,
``base_model``, ``seed``) and ``metrics.jsonl`` (one object per optimizer step with ``epoch``
and the diagnostic panel), as `cppo-bench train` writes them. This module reads those files;
it never imports the trainers.

One figure per algorithm, one curve per base model over epochs (seeds of the same base model
averaged step by step), shaded light to dark by model order:

    pkpo, passk_rl   grad_norm, param_step_norm, adv_nonzero_rate, transformed_reward_var
    upskill          grad_norm, r_correct_mean, r_mi_mean, combined_reward_var
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import quote

TRAIN_DIR = "train"
PANELS: dict[str, tuple[tuple[str, str], ...]] = {
    "pkpo": (
        ("grad_norm", "gradient L2 norm"),
        ("param_step_norm", "parameter-step norm"),
        ("adv_nonzero_rate", "advantage non-zero rate"),
        ("transformed_reward_var", "transformed-reward variance"),
    ),
    "passk_rl": (
        ("grad_norm", "gradient L2 norm"),
        ("param_step_norm", "parameter-step norm"),
        ("adv_nonzero_rate", "advantage non-zero rate"),
        ("transformed_reward_var", "advantage variance"),
    ),
    "upskill": (
        ("grad_norm", "gradient L2 norm"),
        ("r_correct_mean", "r_correct"),
        ("r_mi_mean", "r_mi"),
        ("combined_reward_var", "combined-reward variance"),
    ),
}
COLOURS = {"pkpo": "Reds", "passk_rl": "Blues", "upskill": "Purples"}
TITLES = {"pkpo": "PKPO", "passk_rl": "pass@k-RL", "upskill": "UpSkill"}


@dataclass(frozen=True)
class TrainingRun:
    name: str
    path: Path
    algorithm: str
    base_model: str
    seed: int
    records: list[dict[str, Any]]


def read_training_runs(runs_root: Path, skipped: list[str] | None = None) -> list[TrainingRun]:
    """Every training run under ``<runs_root>/train/`` with a manifest and a metrics log, read
    through the bounded, schema-checked readers of cppo_bench.store.training_schema. A malformed
    run is one DataError line naming its file; with `skipped` given it is listed there and the
    other runs are still read (one bad log does not hide the good ones)."""
    from cppo_bench.files import userfiles
    from cppo_bench.store.training_schema import read_metrics

    folder = Path(runs_root) / TRAIN_DIR
    runs = []
    for manifest in sorted(folder.glob("*/train_manifest.json")) if folder.is_dir() else []:
        if not (manifest.parent / "metrics.jsonl").is_file():
            continue
        try:
            meta = _meta(manifest, userfiles.read_json(manifest, userfiles.MAX_SMALL))
            records = read_metrics(manifest.parent)
        except (DataError, RecursionError, OverflowError) as exc:
            if skipped is None:
                raise DataError(str(exc)) from None
            skipped.append(f"training run skipped: {exc}")
            continue
        if records and meta.get("algorithm"):
            runs.append(
                TrainingRun(
                    manifest.parent.name,
                    manifest.parent,
                    meta["algorithm"],
                    meta["base_model"],
                    meta["seed"],
                    records,
                )
            )
    return runs


def _meta(path: Path, data: Any) -> dict[str, Any]:
    """The fields this module uses, checked: one DataError naming the file otherwise."""
    if not isinstance(data, dict):
        raise DataError(f"{path}: not a JSON object")
    algorithm, base = data.get("algorithm"), data.get("base_model", "?")
    seed = data.get("seed", 0)
    for field, value in (("algorithm", algorithm), ("base_model", base)):
        if value is not None and (not isinstance(value, str) or not value.isprintable()):
            raise DataError(f"{path}: field {quote(field)} must be a printable string")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise DataError(f"{path}: field 'seed' must be an integer")
    return {"algorithm": algorithm, "base_model": base, "seed": seed}


def _number(value: Any) -> float | None:
    """A finite float of a logged number; None for anything else (bool, huge, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def curves(runs: list[TrainingRun], metric: str) -> dict[str, tuple[list[float], list[float]]]:
    """base model -> (epochs, values): the metric per step, averaged over the model's seeds."""
    by_model: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run in runs:
        for rec in run.records:
            value, epoch = _number(rec.get(metric)), _number(rec.get("epoch", rec["step"]))
            if value is not None and epoch is not None:
                by_model[run.base_model][rec["step"]].append((epoch, value))
    out = {}
    for model, steps in by_model.items():
        order = sorted(steps)
        out[model] = (
            [sum(e for e, _ in steps[s]) / len(steps[s]) for s in order],
            [sum(v for _, v in steps[s]) / len(steps[s]) for s in order],
        )
    return out


def dynamics_figure(runs: list[TrainingRun], algorithm: str, out_dir: Path) -> Any:
    """Draw one algorithm's panel; returns a figures.Figure, or raises figures.Skipped."""
    from cppo_bench.report.figures import Figure, Skipped, _plt, _save

    mine = [r for r in runs if r.algorithm == algorithm]
    if algorithm not in PANELS:
        raise Skipped(f"training runs of {quote(algorithm)}: no dynamics panel for this algorithm")
    if not mine:
        raise Skipped(f"no {algorithm} training runs under <runs>/{TRAIN_DIR}/")
    plt = _plt()
    panels = PANELS[algorithm]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.0), squeeze=False)
    cmap = plt.get_cmap(COLOURS.get(algorithm, "Greys"))
    models = sorted({r.base_model for r in mine})
    drawn = 0
    for ax, (metric, label) in zip(axes[0], panels, strict=True):
        data = curves(mine, metric)
        for i, model in enumerate(models):
            if model in data:
                shade = 0.45 + 0.5 * (i / max(len(models) - 1, 1))
                ax.plot(*data[model], color=cmap(shade), lw=1.4, label=model)
                drawn += 1
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("epoch")
        if not data:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
    axes[0][0].legend(fontsize=7)
    title = TITLES.get(algorithm, algorithm)
    fig.suptitle(f"{title} training dynamics", fontsize=10)
    fig.tight_layout()
    if not drawn:
        plt.close(fig)
        raise Skipped(f"{algorithm} training runs log none of the panel's metrics")
    name = f"training_dynamics_{algorithm}"
    png, pdf = _save(fig, out_dir, name)
    caption = (
        f"{title} training dynamics over epochs, one curve per base model (seeds "
        f"averaged): {', '.join(label for _, label in panels)}."
    )
    return Figure(name, f"{title} training dynamics", caption, png, pdf)


def training_figures(runs_root: Path, out_dir: Path) -> tuple[list[Any], list[str]]:
    """Every algorithm's dynamics figure that the runs under ``runs_root`` support."""
    from cppo_bench.report.figures import Skipped

    skipped: list[str] = []
    runs = read_training_runs(runs_root, skipped)
    made = []
    for algorithm in sorted({r.algorithm for r in runs}):
        try:
            made.append(dynamics_figure(runs, algorithm, out_dir))
        except Skipped as why:
            skipped.append(str(why))
    return made, skipped
