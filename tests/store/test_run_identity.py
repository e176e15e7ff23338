"""Run identity (issue #12 item 4): a run is what it computes, not how many problems were
asked for. A larger --limit extends the run, a smaller one reads a prefix, and `runs`,
`stats` and `report` all see the one run through the shared reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.report.run_index import RunIndex
from cppo_bench.store.index import scan
from cppo_bench.store.runs import iter_runs, read_manifest, read_records, write_manifest


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


def run_args(out: Path, *extra: str) -> list[str]:
    base = ["run", "--method", "direct", "--bench", "demo", "-k", "2", "--chunk-size", "2"]
    return [*base, "--out", str(out), "--quiet", *extra]


def solver_problems(backend: ScriptedBackend, demo) -> set[str]:
    """Which problems the backend was asked to generate for."""
    by_statement = {p.statement.strip(): p.problem_id for p in demo}
    asked = set()
    for call in backend.calls:
        for req in call:
            text = req.messages[-1]["content"]
            asked |= {pid for s, pid in by_statement.items() if s in text}
    return asked


def test_larger_limit_extends_the_run_and_smaller_reads_a_prefix(tmp_path, demo):
    first = invoke(run_args(tmp_path, "--limit", "2"), ScriptedBackend(demo))
    assert first.exit_code == 0, first.output
    (run_dir,) = iter_runs(tmp_path)

    backend = ScriptedBackend(demo)
    more = invoke(run_args(tmp_path, "--limit", "4"), backend)
    assert more.exit_code == 0, more.output
    assert list(iter_runs(tmp_path)) == [run_dir]  # the same run, extended
    assert "2 new, 2 already stored" in more.output
    ids = [p.problem_id for p in demo[:4]]
    assert solver_problems(backend, demo) == set(ids[2:])  # nothing regenerated
    m = read_manifest(run_dir)
    assert m.problem_ids == ids and m.selected == 4 and m.status == "complete"
    assert list(read_records(run_dir)) == ids

    fewer = ScriptedBackend(demo)
    prefix = invoke(run_args(tmp_path, "--limit", "1"), fewer)
    assert "0 new, 1 already stored" in prefix.output and fewer.calls == []
    assert read_manifest(run_dir).problem_ids == ids  # a prefix read never shrinks the run

    rows = [
        json.loads(x)
        for x in invoke(["runs", "--out", str(tmp_path), "--json"]).stdout.splitlines()
    ]
    # finished what it was asked, not the benchmark: partial, as stats says (issue 38)
    assert [(r["done"], r["total"], r["status"]) for r in rows] == [
        (4, 4, f"partial: 4/{len(demo)} of the benchmark")
    ]
    stats = invoke(["stats", "passk", "--runs", str(tmp_path), "--k", "2", "--json"])
    assert stats.exit_code == 0, stats.output
    (cell,) = json.loads(stats.stdout)
    solved = sum(r.passed for r in read_records(run_dir).values())
    assert cell["seeds"] == 1 and cell["mean"] == pytest.approx(solved / 4)


def test_all_problems_then_limit_is_the_same_run(tmp_path, demo):
    whole = invoke(run_args(tmp_path), ScriptedBackend(demo))
    assert whole.exit_code == 0, whole.output
    backend = ScriptedBackend(demo)
    again = invoke(run_args(tmp_path, "--limit", "3"), backend)
    assert "0 new, 3 already stored" in again.output and backend.calls == []
    assert len(list(iter_runs(tmp_path))) == 1


def test_an_older_store_with_one_run_per_limit_is_read_once(tmp_path, demo):
    """Stores written before this identity hold a run per --limit: stats no longer averages
    them, and stats and report pick the same one (complete, larger, newer) and say so."""
    for limit in ("2", "3"):
        invoke(run_args(tmp_path / "tmp", "--limit", limit), ScriptedBackend(demo))
        (run_dir,) = iter_runs(tmp_path / "tmp")
        m = read_manifest(run_dir)
        # as an older version wrote it: identified by its exact problem list
        m.dataset_hash, m.dataset_size, m.selected = "", 0, 0
        legacy = tmp_path / "store" / f"k2-seed0-{m.config_hash()}"
        legacy.parent.mkdir(parents=True, exist_ok=True)
        run_dir.rename(legacy)
        write_manifest(legacy, m, root=tmp_path / "store")
    store = scan(tmp_path / "store")
    assert len(store.runs) == 2
    stats = invoke(["stats", "passk", "--runs", str(tmp_path / "store"), "--k", "2", "--json"])
    assert stats.exit_code == 0, stats.output
    assert "same configuration and seed" in stats.stderr
    (cell,) = json.loads(stats.stdout)
    bigger = max(store.runs, key=lambda r: len(r.manifest.problem_ids))
    recs = bigger.records()
    assert cell["mean"] == pytest.approx(sum(r.passed for r in recs.values()) / 3)
    index = RunIndex(tmp_path / "store")
    from cppo_bench.report.specs import Selector

    cell_runs = index.select(
        Selector(label="Direct", method="direct"), bigger.manifest.model, "demo", 2
    )
    assert cell_runs.by_seed[0].path == bigger.path and len(cell_runs.ignored) == 1


def test_a_run_stored_before_this_identity_is_adopted_not_recomputed(tmp_path, demo):
    invoke(run_args(tmp_path, "--limit", "3"), ScriptedBackend(demo))
    (run_dir,) = iter_runs(tmp_path)
    m = read_manifest(run_dir)
    m.dataset_hash, m.dataset_size, m.selected = "", 0, 0  # as an older version wrote it
    legacy = run_dir.with_name(f"k2-seed0-{m.config_hash()}")
    run_dir.rename(legacy)
    write_manifest(legacy, m, root=tmp_path)
    records = (legacy / "records.jsonl").read_text()

    backend = ScriptedBackend(demo)
    again = invoke(run_args(tmp_path, "--limit", "3"), backend)
    assert "0 new, 3 already stored" in again.output and backend.calls == []
    assert list(iter_runs(tmp_path)) == [run_dir]  # renamed to the new identity
    assert (run_dir / "records.jsonl").read_text() == records
    assert read_manifest(run_dir).dataset_hash and read_manifest(run_dir).selected == 3


def _set_weights(folder: Path, content: bytes) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(content)
    return folder


def test_a_model_trained_again_in_place_is_another_run(tmp_path, demo, caplog):
    # The run's label is the --model path; the weights behind it are part of what the run is,
    # so a checkpoint retrained into the same folder never reuses the old weights' samples.
    model = _set_weights(tmp_path / "ckpt", b"weights of the first training")
    args = run_args(tmp_path / "store", "--limit", "2", "--model", str(model))
    first = invoke(args, ScriptedBackend(demo))
    assert first.exit_code == 0, first.output
    again = ScriptedBackend(demo)
    assert invoke(args, again).exit_code == 0 and again.calls == []  # the same weights: reused
    _set_weights(model, b"weights of the second training")
    retrained = ScriptedBackend(demo)
    result = invoke(args, retrained)
    assert result.exit_code == 0, result.output
    assert solver_problems(retrained, demo) == {p.problem_id for p in demo[:2]}  # computed anew
    runs = sorted(iter_runs(tmp_path / "store"))
    prints = {read_manifest(r).extra["identity"]["model_sha256"] for r in runs}
    assert len(runs) == 2 and len(prints) == 2
    assert "differs in model_sha256" in caplog.text  # the note names what differs


def _stored_before_the_fingerprint(tmp_path, demo, finished: bool) -> tuple[Path, Path]:
    """A run of a local model as an older version stored it: no model_sha256 in its
    identity (so under the directory name that identity gives). Returns (its directory as
    this version names it, the model)."""
    from cppo_bench.store.identity import MODEL_KEY
    from cppo_bench.store.runs import run_dir_for

    model = _set_weights(tmp_path / "ckpt", b"w")
    args = run_args(tmp_path / "store", "--limit", "2", "--model", str(model))
    assert invoke(args, ScriptedBackend(demo)).exit_code == 0
    (run_dir,) = iter_runs(tmp_path / "store")
    old = read_manifest(run_dir)
    del old.extra["identity"][MODEL_KEY]
    if not finished:
        old.status = "running"
    write_manifest(run_dir, old, root=tmp_path / "store")
    run_dir.rename(run_dir_for(tmp_path / "store", old))
    return run_dir, model


def test_an_unfinished_run_from_before_the_fingerprint_resumes(tmp_path, demo):
    from cppo_bench.store.identity import MODEL_KEY

    run_dir, model = _stored_before_the_fingerprint(tmp_path, demo, finished=False)
    backend = ScriptedBackend(demo)
    resumed = invoke(run_args(tmp_path / "store", "--limit", "3", "--model", str(model)), backend)
    assert resumed.exit_code == 0, resumed.output
    assert solver_problems(backend, demo) == {demo[2].problem_id}  # the first two are kept
    (adopted,) = iter_runs(tmp_path / "store")
    assert adopted == run_dir and MODEL_KEY in read_manifest(adopted).extra["identity"]


def test_a_finished_run_from_before_the_fingerprint_is_computed_again(tmp_path, demo):
    # its folder's weights may have changed since: it lends its samples to nothing
    _, model = _stored_before_the_fingerprint(tmp_path, demo, finished=True)
    backend = ScriptedBackend(demo)
    args = run_args(tmp_path / "store", "--limit", "2", "--model", str(model))
    assert invoke(args, backend).exit_code == 0
    assert solver_problems(backend, demo) == {p.problem_id for p in demo[:2]}


def test_the_fingerprint_reads_only_regular_files(tmp_path):
    import os

    from cppo_bench.store.identity import model_fingerprint

    model = _set_weights(tmp_path / "ckpt", b"w")
    plain = model_fingerprint(str(model))
    os.mkfifo(model / "planted")  # never opened: a FIFO would block a reader forever
    (model / "link").symlink_to("/dev/zero")
    planted = model_fingerprint(str(model))
    assert plain and planted and planted != plain
    assert model_fingerprint("Qwen/Qwen3.5-4B") is None  # a hub id: nothing local to read
    assert model_fingerprint(str(model / "model.safetensors")) not in (None, plain)
