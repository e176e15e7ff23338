"""The one run-store reader: `runs`, `stats` and `report` all see runs through `scan`.

A stored run is every directory of one identity (see `cppo_bench.store.runs`): the unsharded
`k<K>-seed<S>-<hash>/` and/or its shards `k<K>-seed<S>-<hash>.shard<I>of<N>/`, merged on
read. Its records are the union of theirs (a problem present twice is the same computation:
same seeds, same cache keys), in dataset order; it is complete when every problem of the
largest prefix any member was asked for has a record. What keeps it from being complete or
consistent (a missing shard, shards run with different --limit, a problem in the wrong
shard) is listed in `problems`, by directory name, for the reader to warn about or refuse.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from cppo_bench.errors import DataError
from cppo_bench.store.runs import (
    ProblemRecord,
    RunManifest,
    ids_hash,
    iter_runs,
    read_manifest,
    read_records,
    shard_of,
    shard_suffix,
)
from cppo_bench.util.progress import ProgressFn
from cppo_bench.util.termsafe import quote, safe

_SHARD = re.compile(r"^(?P<base>.+)\.shard(?P<index>\d+)of(?P<count>\d+)$")
TAGS = ("trained", "base_model", "train_seed")  # manifest.extra keys that place a run


@dataclass
class StoredRun:
    path: Path  # the run's unsharded directory (where `runs merge` writes; may not exist)
    manifest: RunManifest  # merged: every problem asked for, in dataset order; shard None
    members: list[tuple[Path, RunManifest]]  # the directories holding its records
    problems: list[str] = field(default_factory=list)  # why it is incomplete or inconsistent
    skipped: list[str] = field(default_factory=list)  # "file:line: why" of records not read
    _records: dict[str, ProblemRecord] | None = None

    @property
    def shards(self) -> list[tuple[Path, RunManifest]]:
        return [(p, m) for p, m in self.members if m.shard is not None]

    @property
    def complete(self) -> bool:
        return self.manifest.status == "complete"

    def records(self) -> dict[str, ProblemRecord]:
        """problem_id -> record, the union over members in dataset order (read once)."""
        if self._records is None:
            pos: dict[str, int] = {}
            merged: dict[str, ProblemRecord] = {}
            for path, m in self.members:  # the unsharded member first: it wins a tie
                pos.update(zip(m.problem_ids, m.positions(), strict=True))
                for pid, rec in read_records(path, m, self.skipped).items():
                    merged.setdefault(pid, rec)
            self._records = {
                i: merged[i] for i in sorted(merged, key=lambda i: pos.get(i, len(pos)))
            }
        return self._records


@dataclass
class StoreScan:
    root: Path
    runs: list[StoredRun]
    unreadable: list[tuple[Path, str]]  # run directories whose manifest could not be read

    @property
    def warnings(self) -> list[str]:
        out = [f"skipped run: {why}" for _, why in self.unreadable]
        for run in self.runs:
            out += [f"{run.path}: {p}" for p in run.problems]
            out += run.skipped  # filled as records are read
        return out


def scan(root: Path, progress: ProgressFn | None = None) -> StoreScan:
    """Every stored run under `root` (a run store or one run directory), shards merged."""
    groups: dict[Path, list[tuple[Path, RunManifest]]] = {}
    unreadable: list[tuple[Path, str]] = []
    for run_dir in iter_runs(Path(root)):
        try:
            if not _utf8(run_dir):  # its name reaches frames, CSV, HTML: all UTF-8 only
                raise DataError(f"{safe(run_dir)}: the folder's name is not UTF-8 text; rename it")
            manifest = read_manifest(run_dir)
        except DataError as exc:
            unreadable.append((run_dir, str(exc)))
        else:
            match = _SHARD.match(run_dir.name) if manifest.shard is not None else None
            base = run_dir.parent / match["base"] if match else run_dir
            groups.setdefault(base, []).append((run_dir, manifest))
        if progress:
            progress(1)
    runs = [_merge(base, members) for base, members in sorted(groups.items())]
    return StoreScan(Path(root), runs, unreadable)


def _utf8(path: Path) -> bool:
    """A folder name that is not UTF-8 comes back from the OS with surrogate escapes, which
    no encoder (pandas, JSON, the terminal) takes: that run is skipped, named."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _label(m: RunManifest) -> str:
    return f"shard {m.shard['index']}/{m.shard['count']}" if m.shard else "unsharded run"


def _merge(base: Path, members: list[tuple[Path, RunManifest]]) -> StoredRun:
    members.sort(key=lambda pm: (pm[1].shard is not None, pm[0].name))
    head = members[0][1]
    if len(members) == 1 and head.shard is None:
        return StoredRun(base, head, members)
    problems: list[str] = []
    pos: dict[str, int] = {}
    owner: dict[str, str] = {}
    for path, m in members:
        if m.config_hash() != head.config_hash() or any(
            m.extra.get(t) != head.extra.get(t) for t in TAGS
        ):
            problems.append(f"{path.name}: manifest differs from {members[0][0].name}")
        pos.update(zip(m.problem_ids, m.positions(), strict=True))
        if m.shard is None:
            continue
        i, n = m.shard["index"], m.shard["count"]
        for pid in m.problem_ids:
            if shard_of(pid, n) != i:
                problems.append(
                    f"{path.name}: problem {quote(pid)} belongs to shard {shard_of(pid, n)}"
                )
            elif pid in owner:
                problems.append(f"problem {quote(pid)} is in both {owner[pid]} and {path.name}")
            owner.setdefault(pid, path.name)
    shards = [m for _, m in members if m.shard is not None]
    sizes = {f"{_label(m)}: {m.selected}" for m in shards}
    if len({m.selected for m in shards}) > 1:
        problems.append(
            "shards were asked for different --limit (" + ", ".join(sorted(sizes)) + ")"
        )
    selected = max(m.selected for _, m in members)
    if len(pos) < selected:
        have = {(s["index"], s["count"]) for m in shards if (s := m.shard) is not None}
        for n in sorted({c for _, c in have}):
            problems += [
                f"shard {i}/{n} missing (no {base.name}{shard_suffix(i, n)})"
                for i in range(n)
                if (i, n) not in have
            ]
        if not problems:
            problems.append(f"{selected - len(pos)} problems are in no member run")
    ids = sorted(pos, key=pos.__getitem__)
    done = all(m.status == "complete" for _, m in members)
    manifest = dataclasses.replace(
        head,
        problem_ids=ids,
        problem_ids_hash=ids_hash(ids),
        selected=selected,
        shard=None,
        created_at=min(m.created_at for _, m in members),
        status="complete" if done and not problems else "running",
        extra={k: v for k, v in head.extra.items() if k != "summary"},
    )
    return StoredRun(base, manifest, members, problems)


def preference(run: StoredRun) -> tuple:
    """Which of several runs of one slot a reader uses: complete, then larger, then newer."""
    m = run.manifest
    return (not run.complete, -len(m.problem_ids), tuple(-ord(c) for c in m.created_at))


def slot(m: RunManifest) -> str:
    """What a run computes apart from its problems: runs of one slot over different problem
    sets (older stores made one run per --limit) would be counted twice if all were read."""
    bare = dataclasses.replace(m, dataset_hash="-", problem_ids_hash="-")
    return bare.config_hash() + repr([m.extra.get(t) for t in TAGS])


def one_per_slot(runs: list[StoredRun]) -> tuple[list[StoredRun], list[str]]:
    """The preferred run of each slot, and a warning naming each run left out."""
    best: dict[str, StoredRun] = {}
    for run in sorted(runs, key=preference):
        best.setdefault(slot(run.manifest), run)
    kept = [r for r in runs if best[slot(r.manifest)] is r]
    warnings = [
        f"{r.path}: same configuration and seed as {best[slot(r.manifest)].path}; "
        "using the complete, larger, newer one"
        for r in runs
        if best[slot(r.manifest)] is not r
    ]
    return kept, warnings
