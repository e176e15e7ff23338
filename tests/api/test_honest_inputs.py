"""Issue 29: nothing dropped silently (every data-loading command says what it read, kept
and dropped, and why; decontam takes run's loader options) and the neighbours' habits
(--max_tokens, --top_p, --n, --output_path, release_v6, a backend name as --model, a
filter that matches nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.store.runs import iter_runs, read_manifest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
APPS = DATA / "apps"
LCB = DATA / "livecodebench" / "code_generation_release_v1_public.jsonl"


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


@pytest.fixture
def mixed_apps(tmp_path) -> tuple[Path, int, int]:
    """3 interview + 2 introductory APPS rows: the default filter keeps 2."""
    if not APPS.exists():
        pytest.skip("the shared APPS sample is not here")
    rows = (APPS / "interview.jsonl").read_text().splitlines()[:3]
    rows += (APPS / "introductory.jsonl").read_text().splitlines()[:2]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(rows) + "\n")
    levels = [json.loads(r)["difficulty"] for r in rows]
    return path, levels.count("interview"), levels.count("introductory")


def _decontam(tmp_path: Path, train: Path, *extra: str):
    return CliRunner().invoke(
        main,
        ["decontam", "--train", f"apps={train}", "--eval", "demo", "--out", str(tmp_path / "d"),
         *extra],
    )  # fmt: skip


def test_decontam_says_what_the_filter_dropped_and_takes_loader_options(tmp_path, mixed_apps):
    train, interview, intro = mixed_apps
    res = _decontam(tmp_path, train)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    total = interview + intro
    assert f"read {total} records, kept {intro}; dropped {interview}: " in text
    assert f"{interview} difficulty is not introductory (-o difficulty=all keeps them)" in text
    kept = (tmp_path / "d" / "filtered_train.jsonl").read_text().count("\n")
    assert kept == intro
    # the same loader options as `run`, globally or for one benchmark
    for option in ("difficulty=all", "apps:difficulty=all"):
        res = _decontam(tmp_path, train, "-o", option)
        assert res.exit_code == 0, res.output
        assert f"read {total} records, kept {total}" in " ".join(res.output.split())
        assert (tmp_path / "d" / "filtered_train.jsonl").read_text().count("\n") == total


def test_run_says_what_the_filter_dropped(tmp_path, mixed_apps):
    train, interview, intro = mixed_apps
    args = ["run", "--method", "direct", "--bench", "apps", "--data", str(train), "--limit", "1",
            "-k", "1", "--out", str(tmp_path / "runs"), "--quiet"]  # fmt: skip
    res = invoke(args, ScriptedBackend([]))
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert f"read {interview + intro} records, kept {intro}; dropped {interview}" in text
    assert "difficulty is not introductory" in text
    assert f"--limit 1: the first 1 of these {intro} problems" in text


def test_an_all_filtered_source_names_its_filter():
    if not LCB.exists():
        pytest.skip("the shared LiveCodeBench sample is not here")
    res = CliRunner().invoke(
        main, ["data", "show", "--bench", "lcb", "--data", str(LCB), "-o", "release_version=v6"]
    )
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "contest date outside" in text and "release_v6 the release" in text
    res = CliRunner().invoke(
        main,
        ["data", "show", "--bench", "lcb", "--data", str(LCB), "-o", "release_version=release_v6"],
    )
    assert res.exit_code == 0 and "kept 300" in " ".join(res.output.split())


def test_lm_eval_spellings_are_aliases(tmp_path, demo):
    out = tmp_path / "out"
    args = ["run", "--method", "direct", "--bench", "demo", "--limit", "1", "--n", "2",
            "--max_tokens", "64", "--top_p", "0.5", "--output_path", str(out), "--quiet"]  # fmt: skip
    res = invoke(args, ScriptedBackend(demo))
    assert res.exit_code == 0, res.output
    (run_dir,) = iter_runs(out)
    m = read_manifest(run_dir)
    assert m.k == 2 and m.sampling["max_tokens"] == 64 and m.sampling["top_p"] == 0.5


def test_a_backend_name_given_as_model_is_the_backend(tmp_path, demo, monkeypatch):
    from cppo_bench.backends import BACKENDS

    seen = {}

    def factory(model=None, **_):
        seen["model"] = model
        return ScriptedBackend(demo)

    factory.default_model = "scripted-default"
    monkeypatch.setitem(BACKENDS._entries, "openai", factory)  # no server, no hub
    args = ["run", "--method", "direct", "--bench", "demo", "--limit", "1", "-k", "1",
            "--model", "openai", "--out", str(tmp_path), "--quiet"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "is a backend name; using --backend openai" in " ".join(res.output.split())
    assert seen["model"] is None  # the backend's default model, not a model called "openai"
    (run_dir,) = iter_runs(tmp_path)
    assert read_manifest(run_dir).backend == "openai"
    # with another --backend it is an error, not a hub lookup
    res = invoke(args, ScriptedBackend(demo))
    assert res.exit_code != 0 and "is a backend name, not a model" in res.output


def test_a_filter_that_matches_nothing_is_an_error_naming_known_values(tmp_path, demo):
    args = ["run", "--method", "direct", "--bench", "demo", "--limit", "1", "-k", "1",
            "--out", str(tmp_path), "--quiet"]  # fmt: skip
    assert invoke(args, ScriptedBackend(demo)).exit_code == 0
    res = CliRunner().invoke(main, ["runs", "--out", str(tmp_path), "--method", "dirct"])
    assert res.exit_code != 0
    assert "'dirct' matches no stored run" in res.output and "stored: direct" in res.output
    assert "not a known method" in res.output and "plansearch" in res.output
    res = CliRunner().invoke(main, ["runs", "--out", str(tmp_path), "--bench", "dmo"])
    assert res.exit_code != 0 and "stored: demo" in res.output
    ok = CliRunner().invoke(main, ["runs", "--out", str(tmp_path), "--method", "direct"])
    assert ok.exit_code == 0 and "direct" in ok.output
