"""`cppo-bench runs merge`: write a sharded run's merged directory.

Readers already merge shards on read (`cppo_bench.store.index`); merging on disk makes the run an
ordinary directory again, e.g. to copy it elsewhere or to resume it unsharded. The merged
directory is the one the unsharded command would have written (same hash), so the unsharded
command resumes it and finds nothing left to do. Nothing is deleted: the shard directories
stay (readers treat them as members of the merged run), records already in the merged
directory are kept, and only missing lines are appended.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cppo_bench.errors import DataError
from cppo_bench.files.fs import exists, open_file
from cppo_bench.files.jsonio import split_lines
from cppo_bench.files.lock import run_locks
from cppo_bench.store.gencache import GEN_CACHE, MAX_CACHE_LINE, GenCache, _entry
from cppo_bench.store.index import StoredRun
from cppo_bench.store.runs import (
    RECORDS,
    append_records,
    read_records,
    repair_tail,
    write_manifest,
)
from cppo_bench.store.summary import summarize


def check_mergeable(run: StoredRun) -> None:
    """One line naming what is missing (a shard by directory name, or the unfinished
    problems of a shard) or inconsistent; nothing when the shards form the whole run."""
    if run.problems:
        raise DataError(f"{run.path}: cannot merge: " + "; ".join(run.problems))
    records = run.records()
    for path, m in run.members:
        left = [i for i in m.problem_ids if i not in records]
        if left:
            shown = ", ".join(left[:5]) + (", ..." if len(left) > 5 else "")
            raise DataError(
                f"{path}: cannot merge: {len(left)} of {len(m.problem_ids)} problems not done "
                f"({shown}); resume it with the same command"
            )


def merge_run(run: StoredRun, root: Path | None = None, lock_wait: float = 0.0) -> int:
    """Write (or complete) `run.path` from its shards; returns the records appended. The
    locks of the run and of every shard are held throughout (the ones `run` takes), and
    nothing is written through a link (`root`: the store the run was found in)."""
    with run_locks([run.path, *(p for p, _ in run.members)], lock_wait):
        return _merge_locked(run, Path(root) if root is not None else run.path.parent)


def _merge_locked(run: StoredRun, root: Path) -> int:
    check_mergeable(run)
    if run.skipped:
        raise DataError(f"cannot merge: {run.skipped[0]}")
    target = run.path
    for name in (RECORDS, GEN_CACHE):
        repair_tail(target / name, root=root)
    have = read_records(target, run.manifest)
    new = [rec for pid, rec in run.records().items() if pid not in have]
    append_records(target, new, root=root)
    _merge_caches(run, target / GEN_CACHE, root)
    m = run.manifest
    extra = dict(m.extra)
    extra["invocations"] = [
        inv for _, member in run.members for inv in member.extra.get("invocations", [])
    ]
    extra["merged_from"] = sorted(p.name for p, _ in run.members if p != target)
    extra["summary"] = summarize(list(run.records().values()), m.k)
    write_manifest(target, dataclasses.replace(m, status="complete", extra=extra), root=root)
    return len(new)


def _merge_caches(run: StoredRun, path: Path, root: Path) -> None:
    """Append the shards' generations the merged cache lacks (a resume then needs none)."""
    keys: set[str] = set(GenCache(path, root=root).entries) if exists(path) else set()
    lines: list[str] = []
    for member, _ in run.members:
        src = member / GEN_CACHE
        if member == run.path or not exists(src):
            continue
        with open_file(src, "rb") as fh:
            for line in split_lines(fh, MAX_CACHE_LINE):
                key = _key(line.text) if line.text is not None and not line.torn else ""
                if key and key not in keys:
                    keys.add(key)
                    lines.append(line.text.rstrip("\n"))  # type: ignore[union-attr]
    if lines:
        with open_file(path, "a", encoding="utf-8", root=root) as fh:
            fh.write("\n".join(lines) + "\n")


def _key(line: str) -> str:
    entry = _entry(line)
    return entry[0] if entry else ""  # a torn or foreign line: the cache skips it too
