"""The data file a stored run names (`manifest.data_source`): a value from a file that
names another file, so it is followed only through the one resolver
(`userfiles.inside`): resolved (links, `..`, `/proc/self/cwd`) inside the folder the
command runs in (the root a `--data` path is given from) or the package's own data (the
`demo` benchmark's file). A run made from a file elsewhere, or a stranger's manifest naming
`/etc/...` or `../..`, is not followed: `samples`, `verify --run`, `audit` and `report`'s
fill-in commands then ask for `--data` (or load the benchmark's own source), never read
what the manifest pointed at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cppo_bench.util import userfiles


def stored_data(data_source: object, bench: str) -> tuple[Path | None, str]:
    """(the file to read, or None; why it is not followed, or "")."""
    if not isinstance(data_source, str) or not data_source or data_source == bench:
        return None, ""
    import cppo_bench

    why = ""
    for root in _roots(cppo_bench.__file__):
        try:
            path = userfiles.inside(root, data_source, "the run's data_source")
        except userfiles.UserFileError as exc:
            why = why or str(exc)
            continue
        if userfiles.is_file(path):
            return path, ""
    return None, why


def _roots(package_init: str | None) -> list[str]:
    """Where a stored data_source may lie: the current folder, and the package's own data
    (a run of a packaged benchmark, `demo`, names its file there)."""
    roots = []
    try:
        roots.append(os.getcwd())
    except OSError:  # the current folder is gone
        pass
    if package_init:
        roots.append(os.path.dirname(package_init))
    return roots


def load_stored(manifest: Any, options: dict[str, Any], unique: bool = False) -> Any | None:
    """The benchmark a run names as its data, loaded, or None when it may not be followed:
    inside the roots above; or, outside them, only when what it holds is exactly the data
    the run recorded (`extra.identity.data_sha256`, the content hash `run` stored): a
    stranger's manifest naming one of your files learns nothing it did not already hold."""
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.errors import DataError
    from cppo_bench.store.identity import content_hash

    path, why = stored_data(manifest.data_source, manifest.bench)
    if path is not None:
        return load_result(manifest.bench, path, unique=unique, **options)
    identity = manifest.extra.get("identity")
    want = identity.get("data_sha256") if isinstance(identity, dict) else None
    if not why or not isinstance(want, str) or not userfiles.is_file(manifest.data_source):
        return None
    try:
        loaded = load_result(manifest.bench, manifest.data_source, **options)
    except DataError:
        return None
    return loaded if content_hash(loaded.problems) == want else None
