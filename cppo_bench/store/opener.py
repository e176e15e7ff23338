"""Opening a run directory for `execute`: create it, or reopen it to resume (keeping its
history), or adopt a run stored before runs were identified by their dataset. The caller
holds the run's lock (`cppo_bench.files.lock`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection
from pathlib import Path

from cppo_bench.errors import DataError
from cppo_bench.files.fs import rename_folder
from cppo_bench.store.gencache import GEN_CACHE
from cppo_bench.store.identity import MODEL_KEY
from cppo_bench.store.runs import (
    MANIFEST,
    RECORDS,
    RunManifest,
    ids_hash,
    read_manifest,
    repair_tail,
    run_dir_for,
    write_manifest,
)
from cppo_bench.util.gitinfo import git_commit
from cppo_bench.util.version import __version__


def _extend(old: RunManifest, new: RunManifest) -> RunManifest:
    """`new` asks for the same run as `old`: keep the larger selection (a larger limit
    extends the run, a smaller one only reads a prefix) and the original provenance."""
    pos = dict(zip(old.problem_ids, old.positions(), strict=True))
    pos.update(zip(new.problem_ids, new.positions(), strict=True))
    ids = sorted(pos, key=pos.__getitem__)
    shard = None if new.shard is None else {**new.shard, "positions": [pos[i] for i in ids]}
    return dataclasses.replace(
        new,
        problem_ids=ids,
        problem_ids_hash=ids_hash(ids),
        selected=max(old.selected, new.selected),
        shard=shard,
        created_at=old.created_at,
        git_commit=old.git_commit,
        package_version=old.package_version,
        extra={**old.extra, **new.extra},
    )


def adopt_legacy(out: Path, manifest: RunManifest) -> Path | None:
    """A run stored before runs were identified by their dataset (its hash covered its exact
    problem list) becomes this run when it computed exactly this selection: it is renamed to
    this run's directory and its manifest gains the dataset fields, so an upgrade resumes
    stored runs instead of recomputing them. Returns the directory adopted, if any."""
    new_dir = run_dir_for(out, manifest)
    if manifest.shard is not None or (new_dir / MANIFEST).exists():
        return None
    old_dir = run_dir_for(out, dataclasses.replace(manifest, dataset_hash=""))
    if not (old_dir / MANIFEST).exists():
        return None
    old = read_manifest(old_dir)
    if old.dataset_hash or old.problem_ids != manifest.problem_ids:
        return None
    fields = ("dataset_hash", "dataset_size", "selected")
    changed = dataclasses.replace(old, **{f: getattr(manifest, f) for f in fields})
    write_manifest(old_dir, changed, root=out)
    rename_folder(old_dir, new_dir, root=out)
    return old_dir


def adopt_unidentified(out: Path, manifest: RunManifest) -> Path | None:
    """A run stored before manifests recorded `extra["identity"]` (the data's content hash,
    the release) is this run when everything else matches: its manifest gains the identity
    and its directory this run's name, so an upgrade resumes it instead of starting over
    beside it. Returns the directory adopted, if any."""
    new_dir = run_dir_for(out, manifest)
    if (new_dir / MANIFEST).exists() or not manifest.extra.get("identity"):
        return None
    bare = dataclasses.replace(
        manifest, extra={k: v for k, v in manifest.extra.items() if k != "identity"}
    )
    old_dir = run_dir_for(out, bare)
    if old_dir.is_symlink() or not (old_dir / MANIFEST).is_file():
        return None
    old = read_manifest(old_dir)
    if old.extra.get("identity") or old.config_hash() != bare.config_hash():
        return None
    old.extra["identity"] = manifest.extra["identity"]
    write_manifest(old_dir, old, root=out)
    rename_folder(old_dir, new_dir, root=out)
    return old_dir


def adopt_unfingerprinted(out: Path, manifest: RunManifest) -> Path | None:
    """An unfinished run stored before manifests recorded the content of a local model
    (`identity.model_sha256`) is this run when everything else matches: it gains the
    fingerprint and this run's name, so an upgrade resumes it. A finished one is left as it
    is and computed again: the folder's weights may have changed since (a checkpoint trained
    again in place), and a finished run would lend its scores to them unseen."""
    identity = manifest.extra.get("identity") or {}
    new_dir = run_dir_for(out, manifest)
    if MODEL_KEY not in identity or (new_dir / MANIFEST).exists():
        return None
    bare_identity = {k: v for k, v in identity.items() if k != MODEL_KEY}
    bare = dataclasses.replace(manifest, extra={**manifest.extra, "identity": bare_identity})
    old_dir = run_dir_for(out, bare)
    if old_dir.is_symlink() or not (old_dir / MANIFEST).is_file():
        return None
    old = read_manifest(old_dir)
    known = old.extra.get("identity") or {}
    if old.status == "complete" or MODEL_KEY in known or old.config_hash() != bare.config_hash():
        return None
    old.extra["identity"] = identity
    write_manifest(old_dir, old, root=out)
    rename_folder(old_dir, new_dir, root=out)
    return old_dir


def _shard_key(m: RunManifest) -> tuple[int, int] | None:
    return None if m.shard is None else (m.shard["index"], m.shard["count"])


def open_run(
    out: Path, manifest: RunManifest, dataset_ids: Collection[str] | None = None
) -> tuple[Path, RunManifest]:
    """Create the run directory, or reopen it (keeping its creation time) to resume; a
    reopened run keeps every problem it was ever asked for (see `_extend`)."""
    run_dir = run_dir_for(out, manifest)
    invocation = {
        "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "package_version": __version__,
        "selected": manifest.selected,
    }
    if (run_dir / MANIFEST).exists():
        old = read_manifest(run_dir)
        known = set(manifest.problem_ids if dataset_ids is None else dataset_ids)
        if (
            old.config_hash() != manifest.config_hash()
            or old.dataset_hash != manifest.dataset_hash
            or _shard_key(old) != _shard_key(manifest)
            or not known.issuperset(old.problem_ids)
        ):
            from cppo_bench.store.identity import differences, identity_fields

            diff = differences(identity_fields(old), identity_fields(manifest))
            why = f" (differs in {'; '.join(diff)})" if diff else ""
            raise DataError(f"{run_dir / MANIFEST}: belongs to a different run configuration{why}")
        # the original provenance stays; each resume is logged below it
        manifest = _extend(old, manifest)
    manifest.extra["invocations"] = [*manifest.extra.get("invocations", []), invocation]
    manifest.status = "running"
    write_manifest(run_dir, manifest, root=out)
    for name in (RECORDS, GEN_CACHE):
        repair_tail(run_dir / name, root=out)
    return run_dir, manifest
