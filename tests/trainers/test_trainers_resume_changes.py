"""A training resume continues the same experiment (issue 38 item 3): a change that alters
what the run trains (lr, ...) is refused naming the key; a harmless one (a longer
max_steps) is allowed and recorded; a step count below the step held is one line, not
"trained 2 steps"; `--resume` says where it starts; Ctrl-C says what was kept, how to
resume, and leaves no `.tmp-step-*` folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


def test_resume_refuses_meaningful_changes_and_records_harmless_ones(
    tmp_path: Path, toy_model: Path, capsys
) -> None:
    from toy_task import run

    from cppo_bench.errors import DataError

    out = tmp_path / "run"
    run(out, toy_model, steps=2, parity_reward=True)
    before = (out / "train_manifest.json").read_text()
    with pytest.raises(DataError, match=r"--resume would change lr \(0.003 -> 1e-05\)"):
        run(out, toy_model, steps=3, resume=True, parity_reward=True, lr=1e-5)
    with pytest.raises(DataError, match="would change seed"):
        run(out, toy_model, steps=3, resume=True, parity_reward=True, seed=1)
    assert (out / "train_manifest.json").read_text() == before  # nothing rewritten
    with pytest.raises(DataError, match="already holds step 2; this config gives 1 steps"):
        run(out, toy_model, steps=1, resume=True, parity_reward=True)
    capsys.readouterr()
    result = run(out, toy_model, steps=3, resume=True, parity_reward=True)
    assert result.steps == 3
    assert "resumed from step 2 of 3" in capsys.readouterr().err
    manifest = json.loads((out / "train_manifest.json").read_text())
    (change,) = manifest["resume_changes"]  # toy_task also moves save_every with the steps
    assert change["at_step"] == 2 and change["changed"]["max_steps"] == [2, 3]
    assert set(change["changed"]) <= {"max_steps", "save_every"}
    assert manifest["config"]["lr"] == 0.003
    steps = [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]


def test_an_interrupt_says_what_was_kept_and_cleans_partial_folders(
    tmp_path: Path, toy_model: Path
) -> None:
    from toy_task import run

    from trainers.engine import interrupt

    out = tmp_path / "run"
    run(out, toy_model, steps=1, parity_reward=True)
    partial = out / "state" / ".tmp-step-00000002"
    partial.mkdir()
    (partial / "optimizer.bin").write_bytes(b"half")
    lines: list[str] = []
    interrupt.report(out, ["train", "pkpo", "--set", "max_steps=4"], lines.append)
    assert not partial.exists()
    text = "\n".join(lines)
    assert "step 1 is kept" in text and "step-00000001" in text
    assert f"resume with: cppo-bench train pkpo --set max_steps=4 --resume --out {out}" in text


def test_ctrl_c_in_train_goes_through_the_report(tmp_path: Path, monkeypatch) -> None:
    import dataclasses

    from click.testing import CliRunner

    import trainers.api
    from cppo_bench.cli import main

    def interrupted(job, echo):  # noqa: ANN001, ANN202 - a recipe's run, stopped
        (Path(job.out) / "state" / ".tmp-step-00000001").mkdir(parents=True)
        raise KeyboardInterrupt

    recipe = dataclasses.replace(trainers.api.RECIPES.get("pkpo"), run=interrupted)

    class OneRecipe:
        def get(self, name: str):  # noqa: ANN201
            return recipe

    monkeypatch.setattr(trainers.api, "RECIPES", OneRecipe())
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["train", "pkpo", "--out", str(out), "--quiet"])
    assert res.exit_code == 130
    assert "nothing kept" in res.output and "interrupted" in res.output
    assert not (out / "state" / ".tmp-step-00000001").exists()


def test_a_config_key_added_since_the_run_was_stored_is_no_change(tmp_path: Path) -> None:
    import dataclasses
    from types import SimpleNamespace

    from cppo_bench.errors import DataError
    from trainers.engine import manifest

    @dataclasses.dataclass
    class Engine:
        lr: float = 1e-6
        max_steps: int = 4
        new_key: int = 7  # not in the stored manifest

    @dataclasses.dataclass
    class Algo:
        n: int = 8

    def spec(**engine):  # noqa: ANN202
        return SimpleNamespace(config=Engine(**engine), algorithm=SimpleNamespace(config=Algo()),
                               seed=0, training=SimpleNamespace(ids_hash="h"))  # fmt: skip

    stored = {"kind": "training", "config": {"lr": 1e-6, "max_steps": 4, "n": 8}, "seed": 0,
              "data": {"problem_ids_sha256": "h"}, "resume_changes": []}  # fmt: skip
    (tmp_path / "train_manifest.json").write_text(json.dumps(stored))
    assert manifest.check_resume_config(tmp_path, spec()) == {}
    assert manifest.check_resume_config(tmp_path, spec(max_steps=8)) == {"max_steps": [4, 8]}
    with pytest.raises(DataError, match=r"would change lr \(1e-06 -> 1e-05\)"):
        manifest.check_resume_config(tmp_path, spec(lr=1e-5))


def test_a_run_moved_with_its_base_resumes_and_another_base_is_refused(
    tmp_path: Path, toy_model: Path
) -> None:
    # a CPPO stage's base is a folder of the same run (../warmup/checkpoints/...): a run
    # moved or copied elsewhere as a whole must still resume; a different base must not
    import shutil

    from toy_task import run

    from cppo_bench.errors import DataError

    tree = tmp_path / "first"
    shutil.copytree(toy_model, tree / "base")
    run(tree / "run", tree / "base", steps=2, parity_reward=True)
    moved = tmp_path / "elsewhere"
    shutil.move(tree, moved)
    assert run(moved / "run", moved / "base", steps=3, resume=True, parity_reward=True).steps == 3
    other = tmp_path / "other-base"
    shutil.copytree(toy_model, other)
    with pytest.raises(DataError, match="--resume needs that base model"):
        run(moved / "run", other, steps=4, resume=True, parity_reward=True)
