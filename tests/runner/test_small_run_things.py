"""The smaller items of issue 45 (item 8): a failed model load leaves no folder in the store;
an APPS train file is recorded as split train; a CodeContests difficulty is a name, never
'nan'; a report is never written into the run store."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from run_scripted import ScriptedBackend

import cppo_bench as cb
from cppo_bench.cli import main
from cppo_bench.errors import ModelLoadError


class _Unloadable(ScriptedBackend):
    """A lazy backend whose model cannot be loaded (a wrong path, a full GPU)."""

    def get(self):  # noqa: ANN201 - the lazy backends' hook
        raise ModelLoadError("model ckpt/missing: cannot be loaded (no config.json)")


def test_a_failed_model_load_leaves_no_model_folder(tmp_path):
    out = tmp_path / "runs"
    backend = _Unloadable(cb.load_benchmark("demo"))
    with pytest.raises(ModelLoadError):
        cb.run("direct", "demo", backend=backend, model="ckpt/missing", k=1, limit=1, out=out)
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))
    # a store that holds other runs keeps them, and keeps its own folders
    cb.run("direct", "demo", backend=ScriptedBackend(cb.load_benchmark("demo")),
           k=1, limit=1, out=out)  # fmt: skip
    before = sorted(out.rglob("*"))
    with pytest.raises(ModelLoadError):
        cb.run("direct", "demo", backend=backend, model="ckpt/missing", k=1, limit=1, out=out)
    assert sorted(out.rglob("*")) == before


def _apps_row(pid: int) -> dict:
    return {"problem_id": pid, "question": f"Print {pid}.", "solutions": json.dumps([f"print({pid})"]),
            "input_output": json.dumps({"inputs": [""], "outputs": [f"{pid}\n"]}),
            "difficulty": "introductory", "url": "https://codeforces.com/problemset/problem/1/A",
            "starter_code": ""}  # fmt: skip


@pytest.mark.parametrize(
    ("where", "options", "split"),
    [
        ("APPS/train/rows.jsonl", {}, "train"),
        ("apps_train.jsonl", {}, "train"),
        ("APPS/test/rows.jsonl", {}, "test"),
        ("copy/rows.jsonl", {}, "test"),  # nothing names a split: the test split
        ("APPS/train/rows.jsonl", {"split": "test"}, "test"),  # asked for: what it says
    ],
)
def test_an_apps_file_is_recorded_as_the_split_its_path_names(tmp_path, where, options, split):
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(_apps_row(i)) + "\n" for i in range(3)))
    problems = cb.load_benchmark("apps", data=str(path), subset=0, **options)
    assert {p.metadata["split"] for p in problems} == {split}


def test_a_codecontests_difficulty_is_a_name_never_nan():
    import pandas as pd

    from cppo_bench.benchmarks.codecontests import DIFFICULTIES, _enum
    from cppo_bench.stats.slices import GROUPERS

    assert _enum(DIFFICULTIES, 7.0) == "A" and _enum(DIFFICULTIES, 2) == "medium"
    assert _enum(DIFFICULTIES, math.nan) is None and _enum(DIFFICULTIES, "3") == "hard"
    row = pd.Series({"difficulty": math.nan, "platform": math.nan})
    assert GROUPERS.get("difficulty")(row) == "(unknown)"
    assert GROUPERS.get("platform")(row) == "(unknown)"


def test_a_report_is_never_written_into_the_run_store(tmp_path):
    runs = tmp_path / "runs"
    cb.run("direct", "demo", backend=ScriptedBackend(cb.load_benchmark("demo")),
           k=1, limit=1, out=runs)  # fmt: skip
    before = sorted(runs.rglob("*"))
    from cppo_bench.store.runs import iter_runs

    (run_dir,) = iter_runs(runs)
    for out in (runs, run_dir / "rep"):
        res = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out", str(out)])
        assert res.exit_code != 0 and "--out" in res.output, res.output
        assert "Traceback" not in res.output
        assert sorted(runs.rglob("*")) == before
