"""Each writer under an output folder or run store, on a real full or read-only tmpfs
(tests/helpers/small_fs.py): one DataError line naming the path and the OS reason, the old
file kept, no temporary file left (issue 37 item 6: the class, at its choke points)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from small_fs import FULL, PAGE, READ_ONLY, REASON, small_fs, snapshot

from cppo_bench.errors import DataError
from cppo_bench.files import fs as storefs
from cppo_bench.files.outdir import OutDir, write_user_file

BIG = "x" * (3 * PAGE)  # more than the one page left free


def _stream(out: OutDir) -> None:
    with out.writing("a.txt") as fh:
        for _ in range(3):
            fh.write(BIG)


# name -> (what it does under the root, the path its line names); every one needs space
# for new data, so a full disk refuses it as a read-only one does
DATA_WRITES: dict[str, tuple[Callable[[Path], object], str]] = {
    "write_text": (lambda root: OutDir(root).write_text("a.txt", BIG), "a.txt"),
    "write_text fsync": (lambda root: OutDir(root).write_text("a.txt", BIG, fsync=True), "a.txt"),
    "write_bytes": (lambda root: OutDir(root).write_bytes("a.txt", BIG.encode()), "a.txt"),
    "writing (streamed)": (lambda root: _stream(OutDir(root)), "a.txt"),
    "write_user_file": (lambda root: write_user_file(root / "a.txt", BIG), "a.txt"),
    "write_atomic": (lambda root: storefs.write_atomic(root / "a.txt", BIG, root=root), "a.txt"),
    "append": (lambda root: _append(root / "log.jsonl"), "log.jsonl"),
}
# these need no new data blocks: only a read-only file system refuses them
META_WRITES: dict[str, tuple[Callable[[Path], object], str]] = {
    "remove": (lambda root: OutDir(root).remove("a.txt"), "a.txt"),
    "clear": (lambda root: OutDir(root).clear("tree"), "tree"),
    "fresh_folder": (lambda root: OutDir(root).fresh_folder("tree"), "tree"),
    "rename": (lambda root: OutDir(root).rename("a.txt", "c.txt"), "a.txt"),
    "link": (lambda root: OutDir(root).link("final", "tree"), "final"),
    "new folder": (lambda root: OutDir(root).write_text("sub/deeper/b.txt", "b"), "sub"),
    "make_dirs": (lambda root: storefs.make_dirs(root, root / "new" / "run"), "new"),
}


def _append(path: Path) -> None:
    with storefs.open_file(path, "a", encoding="utf-8", root=path.parent) as fh:
        fh.write(BIG + "\n")
        fh.flush()


def _seed(root: Path) -> None:
    (root / "a.txt").write_text("old\n")
    (root / "log.jsonl").write_text('{"line": 1}\n')
    (root / "tree" / "x").mkdir(parents=True)
    (root / "tree" / "x" / "f").write_text("f")


def _refused(write: Callable[[Path], object], root: Path, reason: str, names: str) -> None:
    before = snapshot(root)
    with pytest.raises(DataError) as err:
        write(root)
    line = str(err.value)
    assert "\n" not in line and reason in line and str(root / names) in line, line
    assert snapshot(root) == before  # the old file kept, the log's lines kept, no temp file


@pytest.mark.parametrize("state", ("full", "read-only"))
@pytest.mark.parametrize("name", sorted(DATA_WRITES))
def test_a_data_write_refused_is_one_line_and_keeps_the_old_file(tmp_path, name, state) -> None:
    write, names = DATA_WRITES[name]
    with small_fs(tmp_path / "fs") as fs:
        _seed(fs.root)
        fs.fill(leave_pages=1) if state == "full" else fs.read_only()
        _refused(write, fs.root, REASON[state], names)
        fs.restore(state)
        write(fs.root)  # and once there is room again, the same write goes through


@pytest.mark.parametrize("name", sorted(META_WRITES))
def test_a_folder_change_refused_by_a_read_only_disk_is_one_line(tmp_path, name) -> None:
    write, names = META_WRITES[name]
    with small_fs(tmp_path / "fs") as fs:
        _seed(fs.root)
        fs.read_only()
        _refused(write, fs.root, READ_ONLY, names)
        fs.writable()
        write(fs.root)


def test_an_append_that_half_fits_leaves_no_torn_line(tmp_path) -> None:
    """The kernel takes the first page of the write, then the disk is full: the file is cut
    back to where this write began, so the next reader (and append) sees whole lines only."""
    with small_fs(tmp_path / "fs") as fs:
        log = fs.root / "log.jsonl"
        _append(log)
        kept = log.read_bytes()
        fs.fill(leave_pages=1)
        with pytest.raises(storefs.StoreWriteError, match=FULL):
            _append(log)
        assert log.read_bytes() == kept


def test_a_full_verdict_cache_is_one_line_and_keeps_the_others(tmp_path) -> None:
    from cppo_bench.verifier.cache import VerdictCache
    from cppo_bench.verifier.records import VerifyResult

    with small_fs(tmp_path / "fs") as fs:
        cache = VerdictCache(fs.root / "cache")
        result = VerifyResult.from_dict(_verdict())
        cache.put("aa" + "0" * 62, result)
        before = snapshot(fs.root)
        for state in ("full", "read-only"):
            fs.apply(state)
            with pytest.raises(DataError, match=REASON[state]) as err:
                cache.put("bb" + "0" * 62, result)
            assert str(fs.root / "cache" / "bb") in str(err.value)
            assert snapshot(fs.root) == before
            fs.restore(state)
        assert cache.get("aa" + "0" * 62) is not None


def _verdict() -> dict:
    return {"verdict": "AC", "passed": True, "tests_passed": 1, "tests_total": 1,
            "first_failed": None, "time_s": 0.1, "peak_memory_mb": None, "detail": "",
            "code": BIG}  # fmt: skip
