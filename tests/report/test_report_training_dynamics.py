"""`cppo-bench report` draws the PKPO / UpSkill training-dynamics figures from training logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cppo_bench.report.training_dynamics import curves, read_training_runs, training_figures


def _plant(root: Path, name: str, algo: str, model: str, seed: int, metrics: list[dict]) -> None:
    run = root / "train" / name
    run.mkdir(parents=True)
    (run / "train_manifest.json").write_text(
        json.dumps({"algorithm": algo, "base_model": model, "seed": seed})
    )
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


def _steps(n: int, scale: float, keys: list[str]) -> list[dict]:
    return [
        {"step": s + 1, "epoch": (s + 1) / 4, **{k: scale / (s + 1) for k in keys}}
        for s in range(n)
    ]


def test_dynamics_figures_one_curve_per_base_model(tmp_path: Path) -> None:
    pk = ["grad_norm", "param_step_norm", "adv_nonzero_rate", "transformed_reward_var"]
    up = ["grad_norm", "r_correct_mean", "r_mi_mean", "combined_reward_var"]
    _plant(tmp_path, "pkpo-a-s0", "pkpo", "model-a", 0, _steps(8, 1.0, pk))
    _plant(tmp_path, "pkpo-a-s1", "pkpo", "model-a", 1, _steps(8, 3.0, pk))
    _plant(tmp_path, "pkpo-b-s0", "pkpo", "model-b", 0, _steps(8, 2.0, pk))
    _plant(tmp_path, "upskill-a", "upskill", "model-a", 0, _steps(5, 1.0, up))
    runs = read_training_runs(tmp_path)
    assert len(runs) == 4
    c = curves([r for r in runs if r.algorithm == "pkpo"], "grad_norm")
    assert sorted(c) == ["model-a", "model-b"]
    assert c["model-a"][1][0] == pytest.approx(2.0)  # seeds averaged: (1 + 3) / 2
    assert c["model-a"][0][:2] == [0.25, 0.5]  # x axis: epochs
    made, skipped = training_figures(tmp_path, tmp_path / "figs")
    assert sorted(f.name for f in made) == ["training_dynamics_pkpo", "training_dynamics_upskill"]
    assert all(f.png.stat().st_size > 1000 and f.pdf.is_file() for f in made)
    assert skipped == []


def test_no_training_runs_no_figures(tmp_path: Path) -> None:
    assert training_figures(tmp_path, tmp_path / "figs") == ([], [])


def test_a_bad_log_line_names_the_file(tmp_path: Path) -> None:
    _plant(tmp_path, "r", "pkpo", "m", 0, [])
    (tmp_path / "train" / "r" / "metrics.jsonl").write_text("{not json\n")
    from cppo_bench.errors import DataError

    with pytest.raises(DataError, match="metrics.jsonl:1"):
        read_training_runs(tmp_path)
