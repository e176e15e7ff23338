"""A CPPO pipeline resumed (no models): a complete stage runs the settings it recorded or
stops, a longer joint stage continues, and a run folder moved elsewhere reads its own files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainers.cppo_pipeline.stages import StageResult, run_stages, stage_output
from trainers.harness import DataError

SETTINGS = {
    "k": 4,
    "sft": {"epochs": 1},
    "warmup": {"max_steps": 50},
    "joint": {"max_steps": 4},
    "engine": {"lr": 1e-3, "epochs": 30},
}


def _config(**joint: object) -> dict[str, dict[str, object]]:
    settings = json.loads(json.dumps(SETTINGS))
    settings["joint"].update(joint)
    record = {"settings": settings, "seed": 0}
    return {"sft": record, "joint": record}


def _stages(calls: list[str]) -> dict:
    def sft(ctx):
        calls.append("sft")
        (ctx.folder / "planner").mkdir(exist_ok=True)
        (ctx.folder / "planner" / "weights").write_text("w")
        return StageResult(("planner",), outputs={"planner": str(ctx.folder / "planner")})

    def joint(ctx):
        calls.append("joint")
        planner = Path(ctx.output("sft", "planner"))
        (ctx.folder / "used.txt").write_text(str(planner))
        return StageResult(("used.txt",), outputs={"policy": str(planner)})

    return {"sft": sft, "joint": joint}


def _run(out: Path, calls: list[str], **joint: object) -> dict[str, str]:
    return run_stages(out, _stages(calls), ["sft", "joint"], _config(**joint), echo=print)


def test_a_changed_setting_of_a_complete_stage_is_one_line(tmp_path: Path) -> None:
    calls: list[str] = []
    assert _run(tmp_path, calls) == {"sft": "ran", "joint": "ran"}
    changed = _config()
    changed["sft"]["settings"]["engine"]["lr"] = 3e-3  # type: ignore[index]
    with pytest.raises(
        DataError, match=r"sft: --resume would change engine\.lr \(0\.001 -> 0\.003"
    ):
        run_stages(tmp_path, _stages(calls), ["sft", "joint"], changed, echo=print)
    # a stage's own key is what that stage made, even when an engine key shares its name
    for section, key, value in (("sft", "epochs", 3), ("warmup", "max_steps", 9)):
        changed = _config()
        changed["sft"]["settings"][section][key] = value  # type: ignore[index]
        with pytest.raises(DataError, match=rf"would change {section}\.{key} "):
            run_stages(tmp_path, _stages(calls), ["sft", "joint"], changed, echo=print)
    changed = _config()
    changed["sft"]["settings"]["k"] = 8  # type: ignore[index]
    with pytest.raises(DataError, match=r"would change k \(4 -> 8\)"):
        run_stages(tmp_path, _stages(calls), ["sft", "joint"], changed, echo=print)
    changed = _config()
    changed["joint"] = {**changed["joint"], "seed": 1}
    with pytest.raises(DataError, match=r"joint: --resume would change seed \(0 -> 1\)"):
        run_stages(tmp_path, _stages(calls), ["sft", "joint"], changed, echo=print)
    assert calls == ["sft", "joint"]  # nothing ran again under other settings


def test_a_longer_joint_stage_runs_again_and_nothing_before_it(tmp_path: Path) -> None:
    calls: list[str] = []
    _run(tmp_path, calls)
    assert _run(tmp_path, calls) == {"sft": "skipped", "joint": "skipped"}
    # max_steps (and epochs) say how long it runs: the joint stage goes on from its state
    assert _run(tmp_path, calls, max_steps=8) == {"sft": "skipped", "joint": "ran"}
    assert calls == ["sft", "joint", "joint"]


def test_a_moved_run_reads_its_own_files(tmp_path: Path) -> None:
    calls: list[str] = []
    first = tmp_path / "first"
    _run(first, calls)
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(first, moved)
    shutil.rmtree(first)  # the old place is gone: nothing may still point there
    assert stage_output(moved / "sft", "planner") == str((moved / "sft" / "planner").resolve())
    assert _run(moved, calls, max_steps=8)["joint"] == "ran"
    assert (moved / "joint" / "used.txt").read_text() == str((moved / "sft" / "planner").resolve())
    assert stage_output(moved / "joint", "policy") == str((moved / "sft" / "planner").resolve())


def test_an_output_naming_a_file_outside_the_run_is_refused(tmp_path: Path) -> None:
    calls: list[str] = []
    _run(tmp_path / "run", calls)
    manifest = tmp_path / "run" / "sft" / "train_manifest.json"
    data = json.loads(manifest.read_text())
    data["outputs"]["planner"] = "../../outside"
    manifest.write_text(json.dumps(data))
    with pytest.raises(DataError, match="outside"):
        stage_output(tmp_path / "run" / "sft", "planner")


def test_a_plain_resume_takes_the_settings_the_pipeline_recorded(tmp_path: Path) -> None:
    # `cppo-bench train cppo --resume --out DIR` with no --config: the run's own settings,
    # with this command's --set over them (as for the one-stage trainers)
    import dataclasses

    from trainers.api import recorded_config, resolve

    preset = Path(__file__).resolve().parents[2] / "trainers" / "configs" / "strategies.cppo.yaml"
    made = resolve("cppo", config=preset, bench="strategies").config
    settings = dataclasses.asdict(made)
    calls: list[str] = []
    record = {"settings": settings, "seed": 0}
    run_stages(tmp_path, _stages(calls), ["sft"], {"sft": record}, echo=print)
    base = recorded_config("cppo", tmp_path)
    assert base == json.loads(json.dumps(settings, default=str))
    again = resolve("cppo", base=base, overrides={"joint": {"max_steps": 500}}).config
    assert again.engine.kl_beta_solver == made.engine.kl_beta_solver == 1.0
    assert again.joint.max_steps == 500 and again.engine.lr == made.engine.lr
    assert recorded_config("cppo", tmp_path / "empty") is None
