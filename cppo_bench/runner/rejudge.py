"""Re-judging a stored run into a new run: the same completions, judged again by today's
verifier and (optionally) an augmented test set. `cppo-bench verify --run DIR` and
`cppo_bench.api.rejudge` call it.

The source run is only read. The new run's manifest is the source's with
``extra["rejudged"]`` (the source's directory, configuration hash and the verifier's version)
and, with a test set, ``extra["test_set"]``; both are part of its identity, so it gets a
directory of its own beside the source. A re-judge whose run already exists stops, naming it:
nothing is ever overwritten. Each branch keeps its completion, tokens, plan and seed; its
program is extracted and run again, so a newer extractor or checker is what is measured.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files.fs import exists
from cppo_bench.problem import Problem
from cppo_bench.store.runs import (
    MANIFEST,
    RECORDS,
    Branch,
    ProblemRecord,
    RunManifest,
    append_records,
    read_manifest,
    read_records,
    repair_tail,
    run_dir_for,
    store_path,
    write_manifest,
)
from cppo_bench.util.termsafe import quote


@dataclass
class Rejudged:
    source: Path
    run_dir: Path
    manifest: RunManifest
    records: list[ProblemRecord]
    changed: int  # branches whose pass/fail differs from the source's
    before: float | None  # pass@K of the source's records over the same problems
    after: float | None


def _problems(manifest: RunManifest, data: str | Path | None, options: dict[str, Any]) -> Any:
    """The run's benchmark, from `data`, else the file the run was made from when it is
    still there, else the benchmark's own source (the hub)."""
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.runner.rundata import reload_args

    data, options, _ = reload_args(manifest, data, options)  # the run's data, from anywhere
    return load_result(manifest.bench, data, unique=False, **options)


def store_root(run_dir: Path, manifest: RunManifest) -> Path:
    """The run store a run directory lies in (OUT/bench/method/model/run), else its parent."""
    from cppo_bench.store.runs import slug

    parts = run_dir.resolve().parts
    if len(parts) > 4 and parts[-4:-1] == (manifest.bench, manifest.method, slug(manifest.model)):
        return run_dir.resolve().parents[3]
    return run_dir.resolve().parent


def new_manifest(
    source: RunManifest, source_dir: Path, test_set: Any, loaded: Any = None
) -> RunManifest:
    """The re-judged run's manifest: the source's, marked as re-judged (part of its
    identity, so its directory differs from the source's) and as a fresh run. With
    `loaded` (the benchmark it is judged on), the data fields and the identity's content
    hash are what was LOADED, never the source's claim: a re-judge on edited data is
    another run, and one on the original data is not taken for it."""
    from cppo_bench.augment.store import identity
    from cppo_bench.runner.pipeline import run_identity, summarize_tests
    from cppo_bench.store.identity import MODEL_KEY
    from cppo_bench.store.runs import ids_hash
    from cppo_bench.util.gitinfo import git_commit
    from cppo_bench.util.version import __version__

    m = copy.deepcopy(source)
    if loaded is not None:
        dataset = loaded.problems
        m.data_source = str(loaded.source or source.bench)
        m.dataset_hash = ids_hash([p.problem_id for p in dataset])
        m.dataset_size = len(dataset)
        # the data is what was loaded; the model (its content) is still the source's
        model = {k: v for k, v in (source.extra.get("identity") or {}).items() if k == MODEL_KEY}
        m.extra["identity"] = {**run_identity(dataset), **model}
        m.extra["tests"] = summarize_tests(dataset)
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    m.extra = {k: v for k, v in m.extra.items() if k not in ("invocations", "summary", "test_set")}
    m.extra["rejudged"] = {
        "from": str(source_dir),
        "from_config": source.config_hash(),
        "verifier": f"cppo-bench {__version__} ({git_commit() or 'no git'})",
        "at": stamp,
    }
    m.extra.update(identity(test_set))
    m.created_at, m.status = stamp, "running"
    m.package_version, m.git_commit = __version__, git_commit()
    return m


def rejudge(
    run_dir: str | Path,
    *,
    out: str | Path | None = None,
    data: str | Path | None = None,
    loader_options: dict[str, Any] | None = None,
    tests: Any = None,
    workers: int | None = None,
    progress: bool = False,
    on_loaded: Callable[[Any], None] | None = None,
) -> Rejudged:
    """Judge the completions of the run in `run_dir` again into a new run under `out`
    (default: the source's run store). `tests`: an augmented test set (folder or TestSet)."""
    from cppo_bench.augment.store import read_test_set, with_tests
    from cppo_bench.runner.scoring import problem_meta
    from cppo_bench.verifier import VerifyJob, verify_batch

    source_dir = store_path(run_dir, "run directory")
    if workers is not None and (type(workers) is not int or workers < 1):
        raise DataError(f"rejudge: workers must be an integer >= 1, got {quote(workers, 60)}")
    if tests is not None and not isinstance(tests, str | Path) and not hasattr(tests, "bench"):
        raise DataError(f"rejudge: tests must be a test set folder, got {type(tests).__name__}")
    source = read_manifest(source_dir)
    records = read_records(source_dir)
    if not records:
        raise DataError(f"{source_dir}: the run holds no records to judge again")
    test_set = read_test_set(Path(tests)) if isinstance(tests, str | Path) else tests
    if test_set is not None and test_set.bench != source.bench:
        raise DataError(f"test set {test_set.path}: made for {test_set.bench}, not {source.bench}")
    loaded = _problems(source, data, dict(loader_options or {}))
    if on_loaded is not None:
        on_loaded(loaded)
    problems: list[Problem] = loaded.problems
    if test_set is not None:
        problems = with_tests(problems, test_set)
    by_id = {p.problem_id: p for p in problems}
    missing = [pid for pid in records if pid not in by_id]
    if missing:
        raise DataError(
            f"{source_dir}: {len(missing)} of its problems are not in {loaded.source or source.bench}"
            f" (e.g. {quote(missing[0])}): give the data the run was made from with --data"
        )
    if any(by_id[pid].task != "codegen" for pid in records):
        raise DataError(f"{source_dir}: only code-generation runs have programs to judge again")
    manifest = new_manifest(source, source_dir, test_set, loaded)
    root = store_path(out, "--runs") if out is not None else store_root(source_dir, source)
    target = run_dir_for(root, manifest)
    if target.resolve() == source_dir.resolve():
        raise DataError(f"{target}: is the source run itself; nothing is overwritten")
    done: dict[str, ProblemRecord] = {}
    if exists(target / MANIFEST):  # an earlier re-judge: refused when it ended, else resumed
        manifest, done = _resume(target, manifest, root)
    write_manifest(target, manifest, root=root)  # before any record: a retry finds it
    order = [pid for pid in source.problem_ids if pid in records]
    changed = 0
    for lo in range(0, len(order), CHUNK):  # each chunk stored as judged: a kill loses one
        chunk = [pid for pid in order[lo : lo + CHUNK] if pid not in done]
        jobs = [VerifyJob(by_id[pid], b.completion) for pid in chunk for b in records[pid].branches]
        results = iter(verify_batch(jobs, workers=workers, progress=progress))
        fresh = []
        for pid in chunk:
            record, n = _judged(records[pid], results, by_id[pid], problem_meta)
            fresh.append(record)
            changed += n
        append_records(target, fresh, root=root)
        done.update((r.problem_id, r) for r in fresh)
    new_records = [done[pid] for pid in order]
    from cppo_bench.runner.scoring import summarize

    manifest.extra["summary"] = summarize(new_records, manifest.k)
    finished = all(pid in records for pid in source.problem_ids)
    manifest.status = "complete" if finished and source.status == "complete" else "running"
    manifest.extra["rejudged"]["finished"] = True  # a retry of this re-judge is refused now
    write_manifest(target, manifest, root=root)
    n = len(order)
    before = sum(records[pid].passed for pid in order) / n if n else None
    after = sum(r.passed for r in new_records) / n if n else None
    return Rejudged(source_dir, target, manifest, new_records, changed, before, after)


CHUNK = 32  # problems judged, then stored, at a time


def _resume(
    target: Path, manifest: RunManifest, root: Path
) -> tuple[RunManifest, dict[str, ProblemRecord]]:
    """The re-judge stored at `target` by an earlier call: refused when it finished (nothing
    is overwritten), else continued from the records it wrote (a full disk, a kill)."""
    old = read_manifest(target)
    mark = old.extra.get("rejudged")
    if not isinstance(mark, dict) or mark.get("finished"):
        raise DataError(
            f"{target}: this run was already re-judged with this verifier and these tests "
            "(nothing is overwritten; remove that folder to judge it again)"
        )
    if old.config_hash() != manifest.config_hash():
        raise DataError(f"{target / MANIFEST}: belongs to another re-judge; nothing is overwritten")
    repair_tail(target / RECORDS, root=root)  # a torn last line: cut, that problem redone
    skipped: list[str] = []
    done = read_records(target, old, warnings=skipped)  # a bad line: that problem redone
    return old, done


def _judged(
    old: ProblemRecord, results: Any, problem: Problem, meta: Any
) -> tuple[ProblemRecord, int]:
    """`old` with each branch judged again (the next results, in order), and how many
    branches changed pass/fail."""
    branches: list[Branch] = []
    changed = 0
    for b in old.branches:
        r = next(results)
        changed += bool(r.passed) != b.passed
        branches.append(
            dataclasses.replace(
                b, code=r.code or "", verdict=r.verdict, passed=bool(r.passed),
                tests_passed=r.tests_passed, tests_total=r.tests_total,
                time_s=round(float(r.time_s), 4), first_failed=r.first_failed,
                detail=(r.detail or "")[:300],
            )
        )  # fmt: skip
    extra = {**dict(old.extra), **meta(problem)}  # older runs lacked it
    return dataclasses.replace(old, branches=branches, extra=extra), changed
