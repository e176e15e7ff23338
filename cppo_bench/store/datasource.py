"""The data file a stored run names (`manifest.data_source`): a value from a file that
names another file, so it is followed only through the one resolver
(`userfiles.inside`): resolved (links, `..`, `/proc/self/cwd`) inside the folder the
command runs in (the root a `--data` path is given from) or the package's own data (the
`demo` benchmark's file). A stranger's manifest naming `/etc/...` or `../..` is not
followed: `samples`, `verify --run`, `audit`, `run --like` and `report`'s fill-in commands,
which read a run's data through `cppo_bench.runner.rundata.source_of`, then ask for
`--data` (or load the benchmark's own source), never read what the manifest pointed at; a
file outside these roots is read only to compare its bytes with the hash the run recorded."""

from __future__ import annotations

import os
from pathlib import Path

from cppo_bench.files import userfiles


def stored_data(data_source: object, bench: str) -> tuple[Path | None, str]:
    """(the file to read, or None; why it is not followed, or "")."""
    if not isinstance(data_source, str) or not data_source or data_source == bench:
        return None, ""
    from cppo_bench.util.version import PACKAGE_DIR  # (not the package front: a layer up)

    why = ""
    for root in _roots(str(PACKAGE_DIR / "__init__.py")):
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
