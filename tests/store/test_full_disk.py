"""A full or read-only file system under `run --out` (issue 37 item 6), on a real small
tmpfs (tests/helpers/small_fs.py): one `Error:` line naming the file and the OS reason,
never a traceback; what was stored before is intact and the resume completes the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from small_fs import FULL, REASON, one_error_line, small_fs, snapshot

from cppo_bench.cli import main

STATES = ("full", "read-only")


def _run(out: Path, limit: int):  # noqa: ANN202 - a click Result
    args = ["run", "--bench", "demo", "--method", "direct", "--backend", "run_scripted:make",
            "--out", str(out), "--quiet", "--limit", str(limit), "--chunk-size", "1"]  # fmt: skip
    return CliRunner().invoke(main, args)


def _done(out: Path) -> int:
    listing = CliRunner().invoke(main, ["runs", "--out", str(out), "--json"])
    assert listing.exit_code == 0, listing.output
    return json.loads(listing.output)["done"]


def _records(out: Path) -> bytes:
    (path,) = out.rglob("records.jsonl")
    return path.read_bytes()


@pytest.mark.parametrize("state", STATES)
def test_run_on_a_full_or_read_only_store_is_one_line_then_resumes(tmp_path, state) -> None:
    with small_fs(tmp_path / "fs") as fs:
        out = fs.root / "runs"
        assert _run(out, 2).exit_code == 0
        before = snapshot(fs.root)
        fs.apply(state)
        one_error_line(_run(out, 4), REASON[state], str(out))
        assert snapshot(fs.root) == before  # nothing changed, no lock or temp file left
        one_error_line(_run(fs.root / "other", 2), REASON[state], str(fs.root / "other"))
        fs.restore(state)
        again = _run(out, 4)
        assert again.exit_code == 0, again.output
        assert _done(out) == 4 and _records(out).startswith(before_records(before))


def before_records(files: dict[str, bytes]) -> bytes:
    (name,) = [n for n in files if n.endswith("records.jsonl")]
    return files[name]


@pytest.mark.parametrize("free_pages", range(0, 6))
def test_the_disk_filling_at_any_write_of_a_run_loses_nothing(tmp_path, free_pages) -> None:
    """The disk is full after `free_pages` more pages: whichever writer meets it (the lock,
    the manifest, the generation cache, the records) stops the run with one line; no line is
    torn, the records before are kept, and once space is freed the resume completes."""
    with small_fs(tmp_path / "fs") as fs:
        out = fs.root / "runs"
        assert _run(out, 2).exit_code == 0
        earlier = _records(out)
        fs.fill(leave_pages=free_pages)
        result = _run(out, 6)
        if result.exit_code != 0:
            one_error_line(result, FULL, str(out))
        records = _records(out)
        assert records.startswith(earlier) and records.endswith(b"\n")
        leftovers = [p.name for p in out.rglob("*") if p.name.endswith((".tmp", ".lock"))]
        assert leftovers == []
        fs.free()
        again = _run(out, 6)
        assert again.exit_code == 0, again.output
        assert _done(out) == 6
