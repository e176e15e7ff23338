"""A run's identity: everything that changes its samples, named field by field.

`identity_fields` flattens a manifest into the fields that make two runs different
experiments (backend, model, the model the backend reported serving, K, seed, every sampling
setting, every method option, the dataset's ids and content, the benchmark release, an
augmented test set, a trained checkpoint's tags). Three choke points use it:

- `check_new_run` (pipeline.execute, before a run directory is created): a run of the same
  benchmark, method, model, K and seed that is stored incomplete with a different identity
  stops the new one, naming the field, unless `new_run` is given; a complete one is named in
  a note. So changing `--max-tokens` is never a silent second run beside an unfinished one.
- `check_served_model` (pipeline, before a stored run generates more): the model the backend
  reports (an OpenAI-compatible server's /v1/models) must be the one the run was made with.
- `differences` (cppo_bench.store.frames): runs of one benchmark, method and model that differ in
  identity are shown as separate rows named by the differing fields, never pooled.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem

# fields that differ between the seeds (or the shards, the limits) of one experiment
NOT_IDENTITY = ("seed", "rejudged")  # a re-judged run is labelled apart by the frames
NEW_RUN_HINT = "add --new-run to start a separate run beside it, or give another --runs"


def content_hash(problems: Sequence[Problem]) -> str:
    """sha256 over what each problem asks and how it is judged (statement, starter code,
    tests, limits, checker, task, expected answer): a data file edited under the same ids
    is another dataset."""
    digest = hashlib.sha256()
    for p in problems:
        tests = [[t.input, t.output, t.mode, t.fn_name, t.kind] for t in p.tests]
        item = [p.problem_id, p.statement, p.starter_code, tests, p.time_limit_s,
                p.memory_limit_mb, p.checker, p.task, p.label,
                p.metadata.get("input")]  # fmt: skip
        digest.update(json.dumps(item, default=str, sort_keys=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


MODEL_KEY = "model_sha256"  # the identity key of a local model's content
_fingerprints: dict[tuple[Any, ...], str] = {}


def model_fingerprint(model: str | None) -> str | None:
    """sha256 over the files of a local model: the files at the top of its folder (weights,
    config, tokenizer), names and content, or the one file a path names (GGUF). A checkpoint
    retrained into the same folder is then another run, never the stored run of the old
    weights under the same label. None for what is not a local path (a hub id, a served
    model: the backend reports what it serves, `check_served_model`). Links are followed (a
    hub cache snapshot links its blobs); what is not a regular file (a FIFO, a device) is
    named, never read. Computed once per process for a folder whose files did not change."""
    from cppo_bench.files.userfiles import file_sha256

    if not model:
        return None
    path = Path(model).expanduser()
    try:
        files = sorted(path.iterdir()) if path.is_dir() else [path] if path.exists() else []
    except OSError:
        return None
    stats = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):  # a subfolder is not part of the model's files
            stats.append((f, st))
    if not stats:
        return None
    key = tuple((str(f), st.st_ino, st.st_size, st.st_mtime_ns) for f, st in stats)
    if key not in _fingerprints:
        digest = hashlib.sha256()
        for f, _ in stats:
            content = file_sha256(f) or "not a readable regular file"
            digest.update(f"{f.name}\0{content}\0".encode())
        _fingerprints[key] = digest.hexdigest()[:16]
    return _fingerprints[key]


def identity_fields(manifest: Any) -> dict[str, Any]:
    """The manifest's identity as flat `name: value` pairs (values JSON-comparable)."""
    ident = manifest.extra.get("identity") or {}
    fields: dict[str, Any] = {
        "backend": manifest.backend,
        "model": manifest.model,
        "served_model": manifest.extra.get("model_id"),
        "k": manifest.k,
        "seed": manifest.seed,
    }
    fields.update({f"sampling.{k}": v for k, v in sorted(manifest.sampling.items())})
    fields.update({f"method_options.{k}": v for k, v in sorted(manifest.method_options.items())})
    fields["dataset (problem ids)"] = manifest.dataset_hash or manifest.problem_ids_hash
    for key, value in sorted(ident.items()):
        fields[key] = value
    test_set = manifest.extra.get("test_set")
    fields["test_set"] = test_set.get("hash") if isinstance(test_set, dict) else None
    for tag in ("trained", "base_model", "train_seed"):
        fields[tag] = manifest.extra.get(tag)
    # `verify --run` re-judged another run's completions: the store's frames label it
    # "[rejudged]" themselves, so it is told apart from its source without being a field
    fields["rejudged"] = isinstance(manifest.extra.get("rejudged"), dict)
    return fields


def differences(
    a: Mapping[str, Any], b: Mapping[str, Any], skip: Iterable[str] = NOT_IDENTITY
) -> list[str]:
    """The identity fields where `a` and `b` differ, as 'name (A -> B)'. A field one side
    lacks (a manifest written before it was recorded) is not a difference."""
    out = []
    for key in sorted(set(a) | set(b)):
        if key in skip or a.get(key) is None or b.get(key) is None:
            continue
        if a[key] != b[key]:
            out.append(f"{key} ({_short(a[key])} -> {_short(b[key])})")
    return out


def varying(fields: Sequence[Mapping[str, Any]], skip: Iterable[str] = NOT_IDENTITY) -> list[str]:
    """The identity fields with more than one value among `fields`. A field some lack (runs
    stored before it was recorded) varies only if the others disagree among themselves."""
    skip = set(skip)
    keys = sorted({k for f in fields for k in f} - skip)
    return [
        k
        for k in keys
        if len({json.dumps(f[k], default=str) for f in fields if f.get(k) is not None}) > 1
    ]


def label_part(fields: Mapping[str, Any], keys: Sequence[str]) -> str:
    """'max_tokens=128' for the varying keys: what tells a run apart in a table row."""
    return ",".join(f"{k.split('.')[-1]}={_short(fields.get(k))}" for k in keys)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 24 else text[:21] + "..."


def check_new_run(
    out: Path,
    manifest: Any,
    planned_dir: Path,
    *,
    new_run: bool,
    note: Callable[[str], None],
) -> None:
    """Before `planned_dir` is created: stop when an incomplete run of the same benchmark,
    method, model, K and seed differs in identity (unless `new_run`), and note a complete
    one. Shards of this run and the run itself are not siblings."""
    from cppo_bench.store.runs import MANIFEST, read_manifest

    if (planned_dir / MANIFEST).exists():
        return  # a resume: open_run checks that it is the same run
    parent = planned_dir.parent
    if not parent.is_dir():
        return
    prefix = f"k{manifest.k}-seed{manifest.seed}-"
    base = planned_dir.name.split(".shard")[0]
    mine = identity_fields(manifest)
    for sibling in sorted(parent.iterdir()):
        if not sibling.name.startswith(prefix) or sibling.name.split(".shard")[0] == base:
            continue
        if sibling.is_symlink() or not (sibling / MANIFEST).is_file():
            continue
        try:
            other = read_manifest(sibling)
        except DataError:
            continue  # a bad manifest is named by `runs`; it is not this run
        diff = differences(identity_fields(other), mine) or ["its configuration"]
        what = f"{sibling}: a stored run of this benchmark, method, model, K and seed"
        if other.status != "complete" and not new_run:
            raise DataError(
                f"{what} is incomplete and differs in {'; '.join(diff)}: rerun with its "
                f"settings to resume it, or {NEW_RUN_HINT}"
            )
        note(f"note: new run {planned_dir.name}: {what} differs in {'; '.join(diff)}")


def check_served_model(run_dir: Path, stored: Any, backend: Any) -> None:
    """A stored run continues only with the model it was made with: the model id the
    backend reports (for an OpenAI-compatible server, its /v1/models) must match the one
    the manifest recorded."""
    before = stored.extra.get("model_id")
    now = getattr(backend, "model_id", None)
    if before is None or now is None or before == now:
        return
    raise DataError(
        f"{run_dir}: made with served model {_short(before)!s}, but the backend now "
        f"serves {_short(now)!s}: serve the run's model to resume it, or start a run of "
        f"this model with --model {_short(now)} ({NEW_RUN_HINT})"
    )
