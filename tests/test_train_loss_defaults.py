"""The study's loss is what a run gets without asking (issue 25): per-sequence aggregation,
the sampling temperature in the loss, M = 1 as single-sample REINFORCE; and TRL, the loss's
test oracle, is never imported by the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests_paths import REPO

pytest.importorskip("torch")

from trainers.cppo_pipeline.rewards import ablation  # noqa: E402
from trainers.engine.config import ConfigError, build_configs  # noqa: E402


@pytest.mark.parametrize("algo", ["pkpo", "passk_rl", "upskill"])
def test_the_shipped_configs_resolve_to_the_studys_loss(algo: str) -> None:
    from trainers.cli import resolve_layers
    from trainers.engine.algorithm import ALGORITHMS

    for preset in ("study", "demo"):
        engine, _ = build_configs(
            ALGORITHMS.get(algo).Config, resolve_layers(algo, None, (), preset)
        )
        assert engine.aggregation == "sequence-mean"
        assert engine.temperature > 0
    engine, _ = build_configs(ALGORITHMS.get(algo).Config, resolve_layers(algo, None, (), "study"))
    assert engine.temperature == 0.7 and engine.vllm_is_cap is None
    with pytest.raises(ConfigError, match="temperature"):
        build_configs(
            ALGORITHMS.get(algo).Config, resolve_layers(algo, None, ("temperature=0",), "study")
        )
    for name in ("dr_grpo", "dapo", "grpo", "token-mean", "constant"):  # the named options
        layers = resolve_layers(algo, None, (f"aggregation={name}",), "study")
        assert build_configs(ALGORITHMS.get(algo).Config, layers)[0].aggregation == name


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
