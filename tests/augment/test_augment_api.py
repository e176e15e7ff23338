"""`cppo-bench augment` and `audit` as one config and one call each (issue 48 item 2): a
config or its fields as keywords make the same test set as the command, and a bad setting is
one line naming it, before anything loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.api import build_config
from cppo_bench.api.audit import AuditConfig, audit
from cppo_bench.api.augment import AugmentConfig, augment
from cppo_bench.cli import main
from cppo_bench.errors import DataError, UserError
from tests.augment.test_augment import max_problem, total_problem


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "weak.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in (max_problem(),
                                                                    total_problem())))  # fmt: skip
    return path


def test_a_config_keywords_and_the_command_make_the_same_test_set(tmp_path: Path) -> None:
    data = _data(tmp_path)
    config = build_config(AugmentConfig, {"bench": "demo", "data": data, "out": tmp_path / "a",
                                          "per_problem": 3, "workers": 1})  # fmt: skip
    done = augment(config)
    again = augment(bench="demo", data=str(data), out=str(tmp_path / "b"), per_problem=3,
                    workers=1)  # fmt: skip
    cli = CliRunner().invoke(main, ["augment", "--bench", "demo", "--data", str(data), "--out",
                                    str(tmp_path / "c"), "--per-problem", "3", "--workers", "1",
                                    "--quiet"])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    sets = {d: [json.loads(x) for x in (tmp_path / d / "tests.jsonl").read_text().splitlines()]
            for d in "abc"}  # fmt: skip
    tests = {d: [r["tests"] for r in records] for d, records in sets.items()}
    assert tests["a"] == tests["b"] == tests["c"] and all(tests["a"])
    # the tally, against the file itself
    records = sets["a"]
    augmented = [r for r in records if r["status"] == "augmented"]
    assert (done.problems, done.augmented) == (len(records), len(augmented))
    assert done.tests_added == sum(len(r["tests"]) for r in augmented) == again.tests_added
    assert f"{done.augmented} augmented with {done.tests_added} tests" in cli.output
    assert augment(config).done_now == 0  # resumed: nothing left to do


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"oracle": "model"}, "setting generator_model: needed with oracle model"),
        ({"per_problem": 0}, "setting per_problem: must be in [1, 1000], got 0"),
        ({"references": 1}, "setting references: must be in [2, 20], got 1"),
        ({"time_limit": 0}, "setting time_limit: must be > 0"),
        ({"oracle": "human"}, "setting oracle: 'human' is not one of references, model"),
        ({"per_problems": 3}, "unknown setting key per_problems"),
        (
            {"oracle": "model", "generator_model": "m", "generator_backend": "nosuch"},
            "unknown backend 'nosuch'; known: hf",
        ),
    ],
)
def test_a_bad_augment_setting_is_one_line(tmp_path: Path, settings: dict, named: str) -> None:
    with pytest.raises(UserError) as caught:  # DataError; UnknownNameError for the backend
        augment(bench="demo", out=str(tmp_path / "o"), **settings)
    assert named in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "o").exists()
    cli = CliRunner().invoke(main, ["augment", "--bench", "demo", "--out", str(tmp_path / "o"),
                                    "--oracle", "model"])  # fmt: skip
    assert cli.output.startswith("Error: --generator-model: needed with oracle model"), cli.output


def test_audit_names_the_run_it_cannot_audit(tmp_path: Path) -> None:
    augment(bench="demo", data=str(_data(tmp_path)), out=str(tmp_path / "set"), per_problem=2,
            workers=1)  # fmt: skip
    (tmp_path / "run").mkdir()
    with pytest.raises(DataError) as caught:
        audit(AuditConfig(runs=(str(tmp_path / "run"),), tests=str(tmp_path / "set")))
    assert str(caught.value).startswith(f"{tmp_path / 'run'}: ")
    with pytest.raises(DataError, match="setting runs: give at least one run directory"):
        audit(runs=[], tests=str(tmp_path / "set"))
    with pytest.raises(DataError, match="setting resamples: expected int"):
        audit(runs=str(tmp_path / "run"), tests=str(tmp_path / "set"), resamples="many")
