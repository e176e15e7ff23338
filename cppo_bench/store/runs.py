"""Run store schema and I/O: one directory per run.

    <out>/<bench>/<method>/<model-slug>/k<K>-seed<S>-<config-hash>[.shard<I>of<N>]/
        manifest.json     RunManifest
        records.jsonl     one ProblemRecord per line, appended as problems finish
        gen_cache.jsonl   generation cache (see cppo_bench.store.gencache), for resuming

A run is identified by what it computes (method, model, sampling, K, seed, options and the
dataset: the hash of every problem id the benchmark loaded, in order), never by how many of
those problems were asked for (--limit) or which shard computed them (--shard): a larger
limit extends the run, a smaller one reads a prefix, and the shards of a run share its hash
(their directories add `.shard<I>of<N>`) so they merge back into exactly that run.

Writers append whole lines and flush, so a killed run loses at most the problems
in flight; readers skip a torn last line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.files.fs import exists, open_file, write_atomic
from cppo_bench.store.schema import SCHEMAS, check_record
from cppo_bench.util.termsafe import quote

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
MAX_MANIFEST = 512 << 20  # a manifest of 10^7 problem ids is ~200 MB
MAX_RECORD_LINE = 256 << 20  # one record: K programs and completions


@dataclass
class RunManifest:
    method: str
    bench: str
    model: str
    backend: str
    k: int
    seed: int
    sampling: dict[str, Any]
    method_options: dict[str, Any]  # e.g. {"inference": "joint", "select": "first"}
    data_source: str
    problem_ids: list[str]
    problem_ids_hash: str
    package_version: str
    git_commit: str | None
    created_at: str
    status: str = "running"  # running | complete
    extra: dict[str, Any] = field(default_factory=dict)
    # the dataset the problems are a prefix of: ids_hash of all its ids, in loader order
    # ("" in manifests written before runs were identified by their dataset)
    dataset_hash: str = ""
    dataset_size: int = 0
    selected: int = 0  # length of the dataset prefix asked for so far (the largest --limit)
    # a shard run: {"index": I, "count": N, "positions": dataset index of each problem id}
    shard: dict[str, Any] | None = None
    # the pass@k rule its readers score it by, recorded when the run is made (the method's
    # own, for its options): {"estimator": unbiased | first, "select": first | last | random}.
    # None in a manifest written before it was recorded: the reading edge derives it then
    # (cppo_bench.methods.stored.stored_rule). Not part of the identity: options decide it.
    passk: dict[str, str] | None = None

    def config_hash(self) -> str:
        """Identifies what the run computes (not when, where, how many problems or which
        shard): the run directory suffix, shared by a run's limits and shards."""
        fields: list[Any] = [
            self.method,
            self.bench,
            self.model,
            self.backend,
            self.k,
            self.seed,
            self.sampling,
            self.method_options,
        ]
        # an older manifest was identified by its exact problem list; keep its hash valid
        fields.append(self.dataset_hash or self.problem_ids_hash)
        # judged with an augmented test set (cppo-bench augment --tests): another run
        test_set = self.extra.get("test_set")
        if isinstance(test_set, dict) and test_set.get("hash"):
            fields.append(["test_set", test_set["hash"]])
        # judged again from another run's completions (cppo_bench.runner.rejudge): another run
        rejudged = self.extra.get("rejudged")
        if isinstance(rejudged, dict):
            fields.append(["rejudged", rejudged.get("from_config"), rejudged.get("verifier")])
        # what else changes the samples (cppo_bench.store.identity: the data's content hash, the
        # benchmark release); absent from manifests written before it was recorded
        identity = self.extra.get("identity")
        if isinstance(identity, dict) and identity:
            fields.append(["identity", identity])
        payload = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:10]

    def positions(self) -> list[int]:
        """Dataset index of each problem id (an unsharded run holds a dataset prefix)."""
        if self.shard is not None:
            return list(self.shard["positions"])
        return list(range(len(self.problem_ids)))


@dataclass
class Branch:
    """One of the K attempts of a problem."""

    index: int
    code: str
    completion: str
    verdict: str  # AC | WA | TLE | MLE | RE | CE | EMPTY (or a maj@K answer check)
    passed: bool
    tests_passed: int = 0
    tests_total: int = 0
    time_s: float = 0.0
    solver_tokens: int = 0
    plan: str | None = None  # the strategy this branch implemented (tuple methods)
    tuple_index: int = 0  # which independent K-tuple it came from (K > 4 pooling)
    answer: str | None = None  # output-prediction tasks: the normalised predicted answer
    finish_reason: str = ""  # the backend's: stop | length | error
    seed: int = 0  # the generation's sampling seed (replays it from the gen cache)
    first_failed: int | None = None  # index of the first failing test
    detail: str = ""  # the verifier's short explanation of a failure


@dataclass
class ProblemRecord:
    problem_id: str
    branches: list[Branch]
    planner_tokens: int = 0
    solver_tokens: int = 0
    plans: list[list[str]] = field(default_factory=list)  # parsed plan tuples, one per tuple
    plan_validity: list[dict[str, Any]] = field(default_factory=list)
    label: str | None = None  # output-prediction tasks
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def outcomes(self) -> list[bool]:
        """Per-branch pass/fail, in rollout order (what pass@K is computed from)."""
        return [b.passed for b in self.branches]

    @property
    def passed(self) -> bool:
        return any(self.outcomes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProblemRecord:
        d = dict(d)
        d["branches"] = [Branch(**b) for b in d.get("branches", [])]
        return cls(**d)


def store_path(value: Any, what: str = "run store") -> Path:
    """A path the API was handed (`load_runs`, `samples`, `rejudge`) as a Path, or one
    DataError: text or a PathLike naming text, without a NUL byte (None, a number or bytes
    would end in Python's own TypeError deep inside a reader)."""
    try:
        path = os.fspath(value)
    except TypeError:
        raise DataError(
            f"{what}: expected a path (str or pathlib.Path), got {type(value).__name__}"
        ) from None
    if not isinstance(path, str):
        raise DataError(f"{what} {quote(path, 80)}: expected a text path, not bytes")
    if "\0" in path:
        raise DataError(f"{what} {quote(path, 80)}: a path cannot hold a NUL byte")
    return Path(path)


def slug(text: str) -> str:
    """Filesystem-safe form of a model id or path."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.strip("/")).strip("_")[-80:] or "model"


def ids_hash(ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def shard_of(problem_id: str, count: int) -> int:
    """The shard (0..count-1) a problem belongs to: a hash of its id alone, so it never moves
    when problems are added or --limit grows (a prefix of a shard is the shard of a prefix),
    and every node computes it without seeing the others. Balanced in expectation."""
    digest = hashlib.sha256(f"shard|{problem_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` with 0 <= I < N (a Slurm array or Kubernetes job index is 0-based)."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = -1
    if not sep or n < 1 or not 0 <= i < n:
        raise ValueError(f"shard {quote(text)}: expected I/N with 0 <= I < N, e.g. 0/3")
    return i, n


def shard_suffix(index: int, count: int) -> str:
    return f".shard{index}of{count}"


def run_dir_for(out: Path, manifest: RunManifest) -> Path:
    """The run's directory; a shard's is the run's with `.shard<I>of<N>` appended."""
    name = f"k{manifest.k}-seed{manifest.seed}-{manifest.config_hash()}"
    if manifest.shard is not None:
        name += shard_suffix(manifest.shard["index"], manifest.shard["count"])
    return Path(out) / manifest.bench / manifest.method / slug(manifest.model) / name


def write_manifest(run_dir: Path, manifest: RunManifest, *, root: Path) -> None:
    """`root`: the store the user named; the writer makes and checks every folder below it."""
    write_atomic(
        Path(run_dir) / MANIFEST, json.dumps(asdict(manifest), indent=2, sort_keys=True), root=root
    )


def read_manifest(run_dir: Path) -> RunManifest:
    """The run's manifest, checked against the `run_manifest` schema: one DataError naming
    the file and the field for anything unreadable or out of range."""
    path = store_path(run_dir, "run directory") / MANIFEST
    try:
        with open_file(path, "rb") as fh:
            raw = jsonio.read_capped(fh, MAX_MANIFEST)
        if raw is None:
            raise ValueError(f"larger than {MAX_MANIFEST >> 20} MiB")
        doc = jsonio.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not a valid run manifest (not UTF-8: {exc.reason})") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise DataError(f"{path}: not a valid run manifest ({why})") from None
    wrong = SCHEMAS.get("run_manifest").check(doc)
    if wrong:
        raise DataError(f"{path}: not a valid run manifest ({wrong})")
    return RunManifest(**doc)


def repair_tail(path: Path, *, root: Path) -> int:
    """Cut a torn last line (a writer killed mid-line) so the next append starts on a fresh
    line; returns the bytes removed. Complete lines are never touched."""
    path = Path(path)
    if not exists(path):
        return 0
    with open_file(path, "r+b", root=root) as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return 0
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # walk back to the last newline; the file is append-only, so the tear is short
        pos, block = size, 4096
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            pos = start
        else:
            keep = 0
        fh.truncate(keep)
        return size - keep


def append_record(run_dir: Path, record: ProblemRecord, *, root: Path) -> None:
    append_records(run_dir, [record], root=root)


def append_records(run_dir: Path, records: list[ProblemRecord], *, root: Path) -> None:
    """Append whole lines in one write and flush (a kill loses at most this batch)."""
    if not records:
        return
    docs = [r.to_dict() for r in records]
    for doc in docs:  # what every reader would refuse is never stored (the run could not end)
        why = check_record(doc, None, None)
        if why:
            raise DataError(f"{Path(run_dir) / RECORDS}: refusing to store the record of "
                            f"problem {quote(doc.get('problem_id'))}: {why}")  # fmt: skip
    text = "".join(json.dumps(doc, sort_keys=True) + "\n" for doc in docs)
    with open_file(Path(run_dir) / RECORDS, "a", encoding="utf-8", root=root) as fh:
        fh.write(text)
        fh.flush()


def read_records(
    run_dir: Path,
    manifest: RunManifest | None = None,
    warnings: list[str] | None = None,
) -> dict[str, ProblemRecord]:
    """problem_id -> record; the last record of an id wins; a torn final line is skipped.

    Every line is checked against the `run_record` schema and against the run's manifest
    (`manifest`, else the one in `run_dir` if readable): the problem must be one the
    manifest lists and have k branches. A line that fails is never counted: with
    `warnings`, it is skipped and "file:line: why" appended there; without, the first one
    raises DataError naming it."""
    path = store_path(run_dir, "run directory") / RECORDS
    records: dict[str, ProblemRecord] = {}
    if not exists(path):
        return records
    if manifest is None and exists(Path(run_dir) / MANIFEST):
        try:
            manifest = read_manifest(run_dir)
        except DataError:
            manifest = None  # the manifest's own reader reports it
    ids = set(manifest.problem_ids) if manifest is not None else None
    k = manifest.k if manifest is not None else None
    with open_file(path, "rb") as fh:
        for line in jsonio.split_lines(fh, MAX_RECORD_LINE):
            if line.text is not None and not line.text.strip():
                continue
            why = line.error
            if why is None:
                try:
                    doc = jsonio.loads(line.text or "")
                except ValueError as exc:
                    why = f"invalid JSON ({exc})"
                else:
                    why = check_record(doc, ids, k)
            if why is None:
                rec = ProblemRecord.from_dict(doc)
                records[rec.problem_id] = rec
            elif line.torn:  # the torn write of a killed run
                break
            elif warnings is None:
                raise DataError(f"{path}:{line.lineno}: bad record ({why})")
            else:
                warnings.append(f"{path}:{line.lineno}: bad record skipped ({why})")
    return records


def iter_runs(root: Path) -> Iterator[Path]:
    """Every run directory (one holding a manifest) under `root`, sorted; never descends
    a linked directory (a store's links are not followed out of it)."""
    found = []
    for folder, dirs, files in os.walk(Path(root), followlinks=False):
        dirs.sort()
        if MANIFEST in files:
            found.append(Path(folder))
    yield from sorted(found)
