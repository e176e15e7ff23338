"""A run records its pass@k rule when it is made (issue 48 item 1): the store's readers read
it from the manifest and ask no method; a store written before runs recorded it still reads,
its rule derived from its method and options at the reading edge (cppo_bench.stats.read),
exactly as before. The oracle for an old store is the same run with its rule recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from run_scripted import ScriptedBackend

import cppo_bench as cb
from cppo_bench.backends.base import SamplingParams
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.errors import DataError
from cppo_bench.runner.pipeline import EvalSpec, execute
from cppo_bench.store import frames
from cppo_bench.store.runs import MANIFEST, iter_runs

# (method, options) -> the rule its runs record: each method's own (cppo_bench.methods)
MADE = [
    ("direct", {}, {"estimator": "unbiased", "select": "first"}),
    ("cppo", {"select": "last"}, {"estimator": "first", "select": "last"}),
    ("cppo", {"inference": "iid"}, {"estimator": "unbiased", "select": "first"}),
    ("plansearch", {"select": "spread"}, {"estimator": "first", "select": "first"}),
    ("fixed_strategy", {}, {"estimator": "first", "select": "first"}),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    problems = load_benchmark("demo", difficulty="medium", limit=2).problems
    out = tmp_path_factory.mktemp("passk") / "runs"
    for method, options, _ in MADE:
        spec = EvalSpec(method=method, bench="demo", model="scripted-model", backend="scripted",
                        k=4, seed=0, sampling=SamplingParams(max_tokens=64),
                        method_options=options)  # fmt: skip
        execute(spec, problems, ScriptedBackend(problems), out)
    return out


def _manifests(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    return [(d / MANIFEST, json.loads((d / MANIFEST).read_text())) for d in iter_runs(root)]


def _rules(frame: Any) -> dict[str, tuple[str, str]]:
    rows = frame.drop_duplicates("run_dir")
    return {r.run_dir: (r.estimator, r.select) for r in rows.itertuples()}


def _copy(store: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(store, tmp_path / "runs")
    return tmp_path / "runs"


def test_a_run_records_its_methods_rule_when_made(store):
    recorded = sorted(json.dumps(doc["passk"], sort_keys=True) for _, doc in _manifests(store))
    assert recorded == sorted(json.dumps(r, sort_keys=True) for _, _, r in MADE)


def test_a_store_made_before_runs_recorded_their_rule_reads_as_before(store, tmp_path):
    said: list[str] = []
    now = _rules(cb.load_runs(store, warn=said.append))
    old = _copy(store, tmp_path)
    for path, doc in _manifests(old):
        del doc["passk"]  # a manifest written before the field existed
        path.write_text(json.dumps(doc))
    warnings: list[str] = []
    assert {k.replace(str(old), str(store)): v
            for k, v in _rules(cb.load_runs(old, warn=warnings.append)).items()} == now  # fmt: skip
    assert warnings == said  # nothing skipped, nothing new to say
    rep = tmp_path / "rep"
    for args in (["stats", "passk", "--runs", str(old), "--k", "1,2"],
                 ["report", "--runs", str(old), "--out", str(rep), "--formats", "md",
                  "--resamples", "5"]):  # fmt: skip
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0 and "Traceback" not in res.output, res.output[-2000:]


def test_the_recorded_rule_is_read_not_asked_of_the_method(store, tmp_path):
    """The store's reader takes the rule the run recorded (the method is not asked again),
    and works with no method at all: its rule comes from the caller."""
    runs = _copy(store, tmp_path)
    path, doc = next((p, d) for p, d in _manifests(runs) if d["method"] == "direct")
    doc["passk"] = {"estimator": "first", "select": "random"}
    path.write_text(json.dumps(doc))
    assert _rules(cb.load_runs(runs))[str(path.parent)] == ("first", "random")
    asked: list[str] = []

    def rule_of(manifest: Any, where: Path) -> tuple[str, str]:
        asked.append(manifest.method)
        return ("unbiased", "first")

    frame = frames.load_runs(runs, rule_of=rule_of)
    assert sorted(asked) == sorted(m for m, _, _ in MADE) and set(frame["estimator"]) == {
        "unbiased"
    }


@pytest.mark.parametrize(
    "value",
    [{"estimator": "biased", "select": "first"}, {"estimator": "first", "select": "sideways"},
     {"estimator": "first"}, {"estimator": "first", "select": "first", "x": 1}, ["first"],
     "first", {"estimator": ["first"], "select": "first"}],
)  # fmt: skip
def test_a_bad_recorded_rule_skips_its_run_with_one_line(store, tmp_path, value):
    runs = _copy(store, tmp_path)
    path, doc = next((p, d) for p, d in _manifests(runs) if d["method"] == "direct")
    doc["passk"] = value
    path.write_text(json.dumps(doc))
    warnings: list[str] = []
    frame = cb.load_runs(runs, warn=warnings.append)
    said = [w for w in warnings if str(path) in w]
    assert len(said) == 1 and "passk" in said[0] and "\n" not in said[0], warnings
    assert str(path.parent) not in set(frame["run_dir"]) and len(set(frame["run_dir"])) == 4


def test_an_old_run_whose_options_its_method_refuses_is_named_and_left_out(store, tmp_path):
    """Without a recorded rule the options are read as one: the method's own typed options
    check them first (the check the store's schema made before it stopped importing the
    methods), one line naming the manifest and the field."""
    runs = _copy(store, tmp_path)
    for path, doc in _manifests(runs):
        del doc["passk"]
        if doc["method"] == "cppo" and doc["method_options"]["select"] == "last":
            doc["method_options"]["select"] = "sideways"
            bad = path
        path.write_text(json.dumps(doc))
    warnings: list[str] = []
    frame = cb.load_runs(runs, warn=warnings.append)
    said = [w for w in warnings if str(bad) in w]
    assert len(said) == 1 and "select" in said[0] and "\n" not in said[0], warnings
    assert frame.attrs["skipped"]["runs"] == 1 and len(set(frame["run_dir"])) == 4
    path, doc = next((p, d) for p, d in _manifests(runs) if d["method"] == "cppo" and p != bad)
    doc["method_options"]["tuple_size"] = 0
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="tuple_size"):  # nothing readable: the first reason
        cb.load_runs(path.parent)
