"""Where a run's data came from, recorded so the run can be read back and rerun from anywhere.

A run's manifest records, in ``extra["data"]`` (declared in cppo_bench.store.schema), what
loaded its problems: the resolved local path (``path``; None for the hub or the packaged
file), the sha256 of that file's bytes (``file_sha256``; a folder: None, the identity's
``data_sha256`` over the problems still names its content), and every loader option the
command gave (``options``: dates, release, difficulty, subset, split...). ``source_of`` is
the one reader every command that reloads a run's benchmark goes through (`samples`,
`verify --run`, `audit`, `report --check`'s fill-in commands, `run --like`), so none of them
depends on the folder it is run from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files import userfiles

MAX_HASHED = 1 << 40  # a data file of any size a loader reads


def file_sha256(path: Path) -> str | None:
    """sha256 of a data file's bytes (None for a folder, whose problems' hash names it, and
    for anything that is not a regular file: a FIFO or device is never read)."""
    return userfiles.file_sha256(path, MAX_HASHED)


def record(data: str | Path | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's ``extra["data"]`` for a run loaded from ``data`` with ``options``."""
    path = Path(data).resolve() if data is not None else None
    return {
        "path": None if path is None else str(path),
        "file_sha256": None if path is None else file_sha256(path),
        "options": {str(k): _scalar(v) for k, v in sorted(options.items())},
    }


def _scalar(value: Any) -> Any:
    return value if isinstance(value, int | float | str | bool) or value is None else str(value)


@dataclass(frozen=True)
class RunData:
    """How to load a stored run's benchmark again: ``data`` (None: the loader's default
    source), the loader ``options``, and ``note`` when the recorded file is not at hand."""

    data: str | None
    options: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def source_of(manifest: Any) -> RunData:
    """The data and loader options a stored run was made with. A recorded path is a value
    from a file that names another file (a stranger's manifest may name `/etc/...`): it is
    followed inside the folder the command runs in or the package's data
    (`datasource.stored_data`, the one resolver), and elsewhere only while the file there
    holds the very bytes the run recorded (so such a manifest reveals nothing it did not
    already hold). A followed file that changed since the run is one DataError line (its
    problems would not be the run's); one not followed or gone is a note."""
    from cppo_bench.store.datasource import stored_data
    from cppo_bench.util.termsafe import quote

    rec = manifest.extra.get("data") if isinstance(manifest.extra, dict) else None
    rec = rec if isinstance(rec, dict) else {}  # older manifests: the typed source only
    options = dict(rec.get("options") or {})
    path, want = rec.get("path"), rec.get("file_sha256")
    if isinstance(path, str) and path:
        inside, why = stored_data(path, manifest.bench)
        if inside is None and not (isinstance(want, str) and userfiles.is_file(path)):
            reason = why if userfiles.is_file(path) else "not at hand"
            return RunData(None, options, f"the run's data {quote(path)} is {reason}")
        found = Path(path) if inside is None else inside
        if isinstance(want, str) and want and file_sha256(found) != want:
            raise DataError(
                f"{quote(path)}: changed since the run was made (sha256 {quote(want[:12])}... "
                "recorded); give the run's data with --data"
            )
        return RunData(str(found), options)
    # no file given to the run: the loader's own source (a packaged file, as demo's, is a
    # local path in data_source; a hub dataset is not)
    inside, why = stored_data(manifest.data_source, manifest.bench)
    return RunData(None if inside is None else str(inside), options, why)


def reload_args(
    manifest: Any, data: str | Path | None, options: Mapping[str, Any] | None
) -> tuple[str | None, dict[str, Any], str]:
    """(data, loader options, note) to load a stored run's benchmark again: the caller's
    ``data`` / ``options`` where given, over what the run recorded."""
    src = source_of(manifest)
    return (
        str(data) if data is not None else src.data,
        {**src.options, **dict(options or {})},
        "" if data is not None else src.note,
    )
