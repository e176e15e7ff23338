"""Door 3 of docs/untrusted-inputs.md, the folders above a written file: the one writer
(`storefs.write_atomic` / `storefs.open_file` for the run store, `OutDir` for output
folders) makes and checks every folder from the root the user named down to the file
itself, so no caller can hand it a folder it made (or did not make) through a link. A link
planted at each level under `verify --run --into`, beside a re-judged run and under a
training `--out` is one line, and nothing is written where it points."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

import cppo_bench as cb
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.errors import DataError
from cppo_bench.files import fs as storefs
from cppo_bench.files.outdir import OutDir, OutDirError
from cppo_bench.store.runs import MANIFEST, iter_runs, read_manifest, slug


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


@pytest.fixture
def stored(tmp_path, demo) -> Path:
    cb.run("direct", "demo", backend=ScriptedBackend(demo), k=2, limit=2, out=tmp_path / "src")
    (run_dir,) = iter_runs(tmp_path / "src")
    return run_dir


def _plant(at: Path, tmp_path: Path) -> Path:
    """A link at `at` to an empty folder elsewhere (the stranger's target)."""
    target = tmp_path / f"elsewhere-{len(at.parts)}"
    target.mkdir()
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(target, target_is_directory=True)
    return target


def _everything_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


LEVELS = (1, 2, 3)  # bench / method / model folder below the store root


@pytest.mark.parametrize("level", LEVELS)
def test_a_link_at_any_level_under_into_is_one_line(tmp_path, stored, level):
    m = read_manifest(stored)
    store = tmp_path / "into"
    parts = [m.bench, m.method, slug(m.model)][:level]
    target = _plant(store.joinpath(*parts), tmp_path)
    out = invoke(["verify", "--run", str(stored), "--into", str(store)])
    assert out.exit_code == 1, out.output
    assert "symbolic link" in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) <= 2  # the data line, then the one refusal
    assert _everything_under(target) == []  # nothing written where the link points


@pytest.mark.parametrize("level", LEVELS)
def test_a_run_naming_another_model_never_writes_through_a_link_beside_it(tmp_path, stored, level):
    # a run folder moved out of its store layout: the re-judged run goes beside it, under
    # its parent (store_root), where a stranger who shared the folder planted a link
    loose = tmp_path / "shared" / "a-run"
    loose.parent.mkdir()
    os.rename(stored, loose)
    m = read_manifest(loose)
    parts = [m.bench, m.method, slug(m.model)][:level]
    target = _plant(loose.parent.joinpath(*parts), tmp_path)
    with pytest.raises(DataError, match="symbolic link"):
        cb.rejudge(loose)
    assert _everything_under(target) == []


def test_a_linked_run_folder_itself_is_refused(tmp_path, stored):
    m = read_manifest(stored)
    store = tmp_path / "into"
    # the run folder the re-judge would make, planted in advance as a link
    cb_run = cb.rejudge(stored, out=tmp_path / "probe").run_dir  # learn its name
    name = cb_run.name
    target = _plant(store / m.bench / m.method / slug(m.model) / name, tmp_path)
    with pytest.raises(DataError, match="symbolic link"):
        cb.rejudge(stored, out=store)
    assert _everything_under(target) == []


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("writer", ["write_atomic", "append", "repair"])
def test_the_store_writer_checks_every_folder_from_its_root(tmp_path, depth, writer):
    root = tmp_path / "store"
    target = _plant(root.joinpath(*["a", "b", "c"][:depth]), tmp_path)
    (target / "b" / "c").mkdir(parents=True)  # the rest of the path, through the link
    (target / "b" / "c" / "x.jsonl").write_text("kept\n")
    (target / "c").mkdir()
    (target / "c" / "x.jsonl").write_text("kept\n")
    (target / "x.jsonl").write_text("kept\n")
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    path = root / "a" / "b" / "c" / "x.jsonl"
    with pytest.raises(storefs.StoreLinkError, match="symbolic link"):
        if writer == "write_atomic":
            storefs.write_atomic(path, "new\n", root=root)
        elif writer == "append":
            with storefs.open_file(path, "a", encoding="utf-8", root=root) as fh:
                fh.write("new\n")
        else:
            with storefs.open_file(path, "r+b", root=root) as fh:
                fh.truncate(0)
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before


def test_the_store_writer_needs_its_root_and_stays_inside_it(tmp_path):
    with pytest.raises(TypeError, match="root"):
        storefs.open_file(tmp_path / "x.jsonl", "a")  # no caller can skip the folder check
    with pytest.raises(storefs.StoreLinkError, match="leaves the run store"):
        storefs.write_atomic(tmp_path / "store" / ".." / "x", "x", root=tmp_path / "store")
    with pytest.raises(storefs.StoreLinkError, match="not inside"):
        storefs.write_atomic(tmp_path / "other" / "x", "x", root=tmp_path / "store")
    (tmp_path / "store" / "f").parent.mkdir()
    (tmp_path / "store" / "f").write_text("a file where a folder goes")
    with pytest.raises(storefs.StoreLinkError, match="not a directory"):
        storefs.write_atomic(tmp_path / "store" / "f" / "x", "x", root=tmp_path / "store")
    assert not (tmp_path / "x").exists()


TRAIN_FILES = ("state/LATEST", "checkpoints/step-1/artifact.json", "rm/reward_model/x.json")


@pytest.mark.parametrize("rel", TRAIN_FILES)
def test_a_link_at_each_level_under_a_training_out_is_one_line(tmp_path, rel):
    parents = Path(rel).parents
    for level in [p for p in reversed(parents) if str(p) != "."]:
        out = tmp_path / f"out-{len(level.parts)}-{rel.replace('/', '_')}"
        target = _plant(out / level, tmp_path)
        with pytest.raises(OutDirError, match="symbolic link"):
            OutDir(out).write_text(rel, "x")
        with pytest.raises(OutDirError, match="symbolic link"):
            OutDir(out).fresh_folder(rel)
        assert _everything_under(target) == []
        assert not (out / MANIFEST).exists()
