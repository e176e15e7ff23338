"""The study's loss is what a run gets without asking (issue 25): per-sequence aggregation,
the sampling temperature in the loss, M = 1 as single-sample REINFORCE; and TRL, the loss's
test oracle, is never imported by the package."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from tests_paths import REPO

pytest.importorskip("torch")

from trainers.api import resolve  # noqa: E402
from trainers.core.cppo_ablation import ablation  # noqa: E402
from trainers.engine.config import ConfigError  # noqa: E402


@pytest.mark.parametrize("algo", ["pkpo", "passk_rl", "upskill", "cppo"])
def test_the_shipped_configs_resolve_to_the_studys_loss(algo: str) -> None:
    def engine_of(preset: str, **over: object) -> Any:
        cfg = resolve(algo, preset=preset, overrides=over).config
        return cfg.engine if algo == "cppo" else cfg[0]

    def over(**keys: object) -> dict:
        return {"engine": keys} if algo == "cppo" else keys

    for preset in ("study", "demo"):
        engine = engine_of(preset)
        assert engine.aggregation == "sequence-mean"
        assert engine.temperature > 0
    engine = engine_of("study")
    assert engine.temperature == 0.7 and engine.vllm_is_cap is None
    with pytest.raises(ConfigError, match="temperature"):
        engine_of("study", **over(temperature=0))
    for name in ("dr_grpo", "dapo", "grpo", "token-mean", "constant"):  # the named options
        assert engine_of("study", **over(aggregation=name)).aggregation == name


def test_cppo_m1_is_reinforce_and_loo_is_an_option() -> None:
    assert ablation("m1").core_config().m1_baseline == "none"
    assert ablation("cppo", 1).core_config().m1_baseline == "none"  # m: 1 on the main row
    row = ablation("m1_loo")
    assert (row.m, row.core_config().m1_baseline) == (1, "loo")


def test_the_package_never_imports_trl() -> None:
    offenders = []
    for pkg in ("cppo_bench", "trainers"):
        for path in (REPO / pkg).rglob("*.py"):
            tree = ast.parse(Path(path).read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                if any(n == "trl" or n.startswith("trl.") for n in names):
                    offenders.append(str(path.relative_to(REPO)))
    assert not offenders
