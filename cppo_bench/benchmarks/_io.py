"""Reading benchmark records from a local copy or the Hugging Face hub, for every loader.

A local `--data PATH` may be a JSONL file, a JSON file (a list of records, an object holding
one under "rows"/"data"/..., or a single record), a parquet file, a `datasets.save_to_disk`
folder, or a folder of such files (a hub snapshot; shards are picked by split name).
Loaders then map each raw record to a Problem through `collect`, which turns a record's
ValueError into a RecordError naming the file and the record.

Hub access is checked before `datasets` is touched: with HF_HUB_OFFLINE / HF_DATASETS_OFFLINE
set, or the hub host unreachable, the loader stops at once with one line saying what to pass,
instead of waiting out the HTTP client's retries.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cppo_bench.benchmarks._fields import (  # noqa: F401 - re-exported to the loaders
    as_int,
    in_window,
    iso_date,
    json_field,
    parse_date_option,
    reject_unknown,
)
from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.files import jsonio, userfiles
from cppo_bench.problem import LoadResult, Problem, RecordError
from cppo_bench.util.termsafe import quote

OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
LOCAL_FORMATS = "JSONL/JSON/parquet/save_to_disk folder"
DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".parquet")
SPLIT_NAMES = ("train", "test", "valid", "validation")
# keys under which a JSON object may hold its list of records
ROW_KEYS = ("rows", "data", "records", "problems", "examples")
PROBE_TIMEOUT_S = 3.0
MAX_LINE_BYTES = jsonio.MAX_LINE  # one JSONL record (LiveCodeBench lines: ~100 MB)
MAX_JSON_BYTES = 1 << 30  # one whole-file JSON document


@dataclass(frozen=True)
class RawRow:
    """One source record, or why it could not be read: `source` is the file (or hub dataset),
    `pos` the record's position in it ("line 12", "row 3")."""

    source: str
    pos: str
    record: Any = None
    error: str | None = None


# --- local files -----------------------------------------------------------------------------


def _jsonl_rows(path: Path) -> Iterator[RawRow]:
    """Lines split on \\n only (U+2028 inside a string is not a line end), each decoded and
    parsed on its own: a bad line is that line's error, with its number."""
    for line in userfiles.lines(path, MAX_LINE_BYTES):
        pos = f"line {line.lineno}"
        if line.text is None:
            yield RawRow(str(path), pos, error=line.error)
            continue
        if not line.text.strip():
            continue
        try:
            yield RawRow(str(path), pos, jsonio.loads(line.text))
        except json.JSONDecodeError as exc:
            yield RawRow(str(path), pos, error=f"invalid JSON ({exc.msg} at column {exc.colno})")
        except ValueError as exc:
            yield RawRow(str(path), pos, error=str(exc))


def _json_rows(path: Path) -> Iterator[RawRow]:
    raw = userfiles.read_bytes(path, MAX_JSON_BYTES)
    try:
        doc = jsonio.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    if isinstance(doc, dict):
        key = next((k for k in ROW_KEYS if isinstance(doc.get(k), list)), None)
        doc = doc[key] if key else [doc]  # no list inside: the file is one record
    if not isinstance(doc, list):
        raise DataError(f"{path}: expected a JSON list or object, got {type(doc).__name__}")
    for i, record in enumerate(doc):
        yield RawRow(str(path), f"item {i}", record)


def _parquet_rows(path: Path) -> Iterator[RawRow]:
    import pyarrow.parquet as pq

    userfiles.check(path, 1 << 40)  # a regular file (pyarrow opens it, reading in batches)
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own error types for bad files
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None
    i = 0
    for batch in parquet.iter_batches(batch_size=64):
        for record in batch.to_pylist():
            yield RawRow(str(path), f"row {i}", record)
            i += 1


def _is_saved_dataset(path: Path) -> bool:
    return (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()


def _saved_dataset_rows(path: Path, split: str | None) -> Iterator[RawRow]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # corrupt or foreign folder
        raise DataError(f"{path}: not a readable save_to_disk folder ({exc})") from None
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds)
        pick = split if split in ds else (names[0] if len(names) == 1 else None)
        if pick is None:
            raise DataError(f"{path}: has splits {', '.join(names)} but not {quote(split)}")
        ds, source = ds[pick], f"{path}[{pick}]"
    else:
        source = str(path)
    for i, record in enumerate(ds):
        yield RawRow(source, f"row {i}", record)


def _visible(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError:
        return []


def data_files(folder: Path, split: str | None) -> list[Path]:
    """Data files in `folder`, else in its direct subfolders (a hub snapshot's `data/`);
    where file names carry split names, only `split`'s. Never deeper: pointed at a large
    tree by mistake, a walk of every file would take minutes and read unrelated files."""
    entries = _visible(folder)
    # userfiles.is_file: a FIFO or a device named like data is listed, then refused by name
    files = [
        p for p in entries if userfiles.is_file(p) and not p.is_dir() and p.suffix in DATA_SUFFIXES
    ]
    if not files:
        files = [
            p
            for sub in entries
            if sub.is_dir()
            for p in _visible(sub)
            if userfiles.is_file(p) and p.suffix in DATA_SUFFIXES
        ]
    by_split = [p for p in files if p.name.split("-")[0].split(".")[0] in SPLIT_NAMES]
    if split and by_split:
        return [p for p in by_split if p.name.split("-")[0].split(".")[0] == split]
    return files


def file_rows(path: Path) -> Iterator[RawRow]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl_rows(path)
    if suffix == ".json":
        return _json_rows(path)
    if suffix == ".parquet":
        return _parquet_rows(path)
    raise DataError(
        f"{path}: unsupported file type {suffix or '(none)'} (expected {LOCAL_FORMATS})"
    )


def local_rows(path: str | Path, split: str | None = None) -> Iterator[RawRow]:
    """Every record of a local copy, in file order."""
    path = Path(path)
    if userfiles.is_file(path):  # a FIFO or device too: the reader names and refuses it
        yield from file_rows(path)
    elif path.is_dir():
        if _is_saved_dataset(path):
            yield from _saved_dataset_rows(path, split)
            return
        files = data_files(path, split)
        if not files:
            raise DataError(f"{path}: no {LOCAL_FORMATS} data found in this folder")
        for f in files:
            yield from file_rows(f)
    else:
        raise DataError(f"{path}: no such file or folder")


# --- the hub ---------------------------------------------------------------------------------


def _offline_reason() -> str | None:
    from cppo_bench.util import env

    for name in OFFLINE_ENV:
        if env.text(name, "").lower() in ("1", "true", "yes", "on"):  # type: ignore[union-attr]
            return f"{name} is set"
    if env.text("HTTPS_PROXY") or env.text("https_proxy"):
        return None  # a proxy decides reachability; let the client try
    # a nonsense endpoint is one line naming the variable, not a traceback from urlparse
    endpoint = urlparse(env.url("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        return f"{host} unreachable: {exc.strerror or exc}"
    return None


def offline_error(hub_id: str, formats: str, why: str) -> DataError:
    return DataError(
        f"cannot reach the Hugging Face hub for {hub_id} ({why}); "
        f"pass --data PATH to a local copy ({formats})"
    )


def require_hub(hub_id: str, formats: str = LOCAL_FORMATS) -> None:
    """Raise the one-line DataError when the hub cannot be used right now."""
    why = _offline_reason()
    if why:
        raise offline_error(hub_id, formats, why)


def hub_rows(
    hub_id: str,
    split: str,
    *,
    config: str | None = None,
    formats: str = LOCAL_FORMATS,
    raw_files: dict[str, list[str]] | None = None,
) -> Iterator[RawRow]:
    """Rows of a hub dataset through `datasets.load_dataset` (imported only here). Where the
    repo still carries a loading script, which `datasets` >= 4 refuses to run, `raw_files`
    names the repo's own data files for `split` to read instead."""
    require_hub(hub_id, formats)
    import datasets

    try:
        ds = datasets.load_dataset(hub_id, config, split=split)
    except (ConnectionError, OSError) as exc:
        raise offline_error(hub_id, formats, type(exc).__name__) from None
    except Exception as exc:  # datasets raises many types; report any in one line
        if raw_files and split in raw_files and "script" in str(exc).lower():
            yield from hub_file_rows(hub_id, raw_files[split], formats)
            return
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise DataError(
            f"{hub_id}[{split}]: cannot load from the hub ({type(exc).__name__}: {first_line}); "
            f"pass --data PATH to a local copy ({formats})"
        ) from None
    for i, record in enumerate(ds):
        yield RawRow(f"{hub_id}[{split}]", f"row {i}", record)


def hub_file_rows(hub_id: str, filenames: Iterable[str], formats: str) -> Iterator[RawRow]:
    """Rows of raw data files of a hub dataset repo (for repos `datasets` cannot build)."""
    require_hub(hub_id, formats)
    from huggingface_hub import hf_hub_download

    for name in filenames:
        try:
            local = hf_hub_download(hub_id, name, repo_type="dataset")
        except (ConnectionError, OSError) as exc:
            raise offline_error(hub_id, formats, f"{name}: {type(exc).__name__}") from None
        for row in file_rows(Path(local)):
            yield RawRow(f"{hub_id}/{name}", row.pos, row.record, row.error)


# --- mapping records to problems -------------------------------------------------------------


def collect(
    rows: Iterable[RawRow],
    parse: Callable[[dict[str, Any], int], Problem | None],
    record_id: Callable[[Any], str | None],
    *,
    strict: bool,
    source: str,
    filtered: str = "left out by the loader's options",
) -> LoadResult:
    """Map rows with `parse(record, ordinal)` (None: filtered out, counted under `filtered`,
    the reason; ValueError: malformed); the
    ordinal counts every row of the source, readable or not, so it can name id-less records.
    Malformed records become RecordErrors (`strict`: DataError on the first); a repeated
    problem id is malformed too."""
    problems: list[Problem] = []
    errors: list[RecordError] = []
    seen: dict[str, tuple[Problem, str]] = {}  # problem id -> (its problem, its record)
    ambiguous: set[str] = set()
    left_out = 0
    for ordinal, row in enumerate(rows):
        rid = row.pos
        try:
            if row.error:
                raise ValueError(row.error)
            name = record_id(row.record) if isinstance(row.record, dict) else None
            rid = f"{name} ({row.pos})" if name else row.pos
            if not isinstance(row.record, dict):
                raise ValueError(f"expected an object, got {type(row.record).__name__}")
            problem = parse(row.record, ordinal)
            if problem is not None and problem.problem_id in seen:
                first, first_rid = seen[problem.problem_id]
                if problem != first:  # two different problems under one id: neither is used
                    ambiguous.add(problem.problem_id)
                    raise ValueError(
                        f"problem id {problem.problem_id} is also that of record {first_rid} "
                        "(different problems under one id: both refused)"
                    )
                raise ValueError(f"duplicate problem id {problem.problem_id}")
        except (ValueError, TypeError, KeyError, OverflowError) as exc:  # unexpected shape
            reason = (
                f"missing field {quote(exc.args[0])}" if isinstance(exc, KeyError) else str(exc)
            )
            err = RecordError(row.source, rid, reason)
            if strict:
                raise DataError(str(err)) from None
            errors.append(err)
            continue
        if problem is not None:
            seen[problem.problem_id] = (problem, rid)
            problems.append(problem)
        else:
            left_out += 1
    for pid in ambiguous:  # programs for this id would be judged against either problem
        errors.append(RecordError(source, seen[pid][1], f"problem id {pid} is ambiguous; refused"))
    problems = [p for p in problems if p.problem_id not in ambiguous]
    dropped = {filtered: left_out} if left_out else {}
    return LoadResult(problems=problems, errors=errors, source=source, dropped=dropped)


# --- small helpers shared by the loaders -------------------------------------------------------


def load_dated_scenario(
    name: str,
    hub_id: str,
    data: str | Path | None,
    parse: Callable[[dict[str, Any], str | None, str | None], Problem | None],
    record_id: Callable[[Any], str | None],
    *,
    strict: bool,
    start_date: Any,
    end_date: Any,
    options: dict[str, Any],
) -> LoadResult:
    """Load a LiveCodeBench side scenario (test split) within an inclusive contest-date window."""
    reject_unknown(name, options)
    start = parse_date_option("start_date", start_date)
    end = parse_date_option("end_date", end_date)
    if data is None:
        rows, source = hub_rows(hub_id, "test"), f"{hub_id}[test]"
    else:
        rows, source = local_rows(data, "test"), str(data)
    return collect(
        rows,
        lambda record, _n: parse(record, start, end),
        record_id,
        strict=strict,
        source=source,
        filtered=f"contest date outside {start or '...'}..{end or '...'} (start_date/end_date)",
    )


def dated_scenario_spec(
    name: str,
    description: str,
    hub_id: str,
    parse: Callable[[dict[str, Any], str | None, str | None], Problem | None],
    record_id: Callable[[Any], str | None],
) -> BenchmarkSpec:
    """The spec of a LiveCodeBench side scenario: its loader is load_dated_scenario over the
    scenario's own record parser, with the contest-date window as options."""

    def load(
        data: str | Path | None = None,
        *,
        strict: bool = False,
        start_date: Any = None,
        end_date: Any = None,
        **options: Any,
    ) -> LoadResult:
        return load_dated_scenario(name, hub_id, data, parse, record_id, strict=strict,
                                   start_date=start_date, end_date=end_date, options=options)  # fmt: skip

    load.__name__ = load.__qualname__ = f"load_{name}"
    load.__doc__ = f"{description}: the scenario's problems, within an inclusive date window."
    return BenchmarkSpec(name, description, load, hub_id=hub_id, default_split="test")
