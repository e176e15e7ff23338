"""LiveCodeBench code generation (`livecodebench/code_generation_lite`), release_v6 by default.

Version tags follow the dataset: the repo holds one JSONL file per release increment
(`test.jsonl` for v1, `test2.jsonl` ... `test6.jsonl`); `release_vN` is the union of
increments 1..N, `vN` increment N alone, `vA_vB` increments A..B, `release_latest` all.
From the hub and from a local folder holding those files the tag picks files; for any other
local copy (one JSONL / parquet / ...) an explicitly given tag becomes the increments'
publication window on `contest_date` (per the dataset card). `start_date` / `end_date`
(inclusive ISO dates) narrow the window further.

Hidden tests (`private_test_cases`) are plain JSON in some releases and
base64(zlib(pickle(json string))) in others; the pickle is read by `safe_pickle`, which runs
nothing. Functional (LeetCode) tests become call-mode Tests: each line of the input is one
JSON argument, stored as a JSON list; `metadata.func_name` names the method.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from cppo_bench.benchmarks._io import (
    RawRow,
    collect,
    hub_file_rows,
    in_window,
    iso_date,
    json_field,
    local_rows,
    parse_date_option,
    reject_unknown,
)
from cppo_bench.benchmarks.safe_pickle import UnsafePickleError, safe_loads
from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.problem import MAX_TEST_CHARS, MAX_TESTS, LoadResult, Problem, SourceIds, Test
from cppo_bench.util.termsafe import quote

HUB_ID = "livecodebench/code_generation_lite"
DEFAULT_RELEASE = "release_v6"
LATEST = 6
# publication window (inclusive) of each release increment, from the dataset card
WINDOWS = {
    1: ("2023-05-01", "2024-03-31"),
    2: ("2024-04-01", "2024-05-31"),
    3: ("2024-06-01", "2024-07-31"),
    4: ("2024-08-01", "2024-09-30"),
    5: ("2024-10-01", "2025-01-31"),
    6: ("2025-02-01", "2025-04-30"),
}
FORMATS = "JSONL/JSON/parquet/save_to_disk folder, or a clone of the dataset repo"
# refuse zlib and pickle bombs before they grow: the inflated pickle is held once, its string
# once more, and the parsed tests once more, so this bounds a blob's peak to a few times it
MAX_DECOMPRESSED = 128 << 20
# objects and numbers in one problem's hidden tests (a test is one object): counted while the
# JSON is decoded, so an inflated blob of millions of tiny tests stops at this count
MAX_JSON_VALUES = 8 * MAX_TESTS
_TAG = re.compile(r"^(?:release_v(\d+)|release_latest|v(\d+)(?:_v(\d+))?)$")


def increment_file(n: int) -> str:
    return "test.jsonl" if n == 1 else f"test{n}.jsonl"


def release_increments(tag: str) -> list[int]:
    """The increments a version tag covers: release_v3 -> [1, 2, 3], v2_v4 -> [2, 3, 4]."""
    match = _TAG.match(tag.strip())
    if not match:
        raise DataError(
            f"unknown LiveCodeBench version {quote(tag)} (release_v1..release_v{LATEST}, "
            f"release_latest, v1..v{LATEST}, or a range like v1_v3)"
        )
    cumulative, first, last = match.groups()
    if cumulative or tag.strip() == "release_latest":
        lo, hi = 1, int(cumulative or LATEST)
    else:
        lo, hi = int(first), int(last or first)
    if not 1 <= lo <= hi <= LATEST:
        raise DataError(f"LiveCodeBench version {quote(tag)} is outside v1..v{LATEST}")
    return list(range(lo, hi + 1))


def increment_of(date: str | None) -> str | None:
    """The release increment ("v1".."v6") whose publication window holds `date` (ISO)."""
    if not date:
        return None
    day = date[:10]
    return next((f"v{n}" for n, (lo, hi) in WINDOWS.items() if lo <= day <= hi), None)


def version_window(tag: str) -> tuple[str, str]:
    increments = release_increments(tag)
    return WINDOWS[increments[0]][0], WINDOWS[increments[-1]][1]


# --- hidden tests ----------------------------------------------------------------------------


def decode_private_tests(blob: Any) -> list[Any]:
    """`private_test_cases` -> list of test dicts: JSON first, else base64/zlib/safe pickle."""
    if blob is None or blob == "" or blob == []:
        return []
    if isinstance(blob, list):
        return _as_test_list(blob)
    if not isinstance(blob, str):
        raise ValueError(f"private_test_cases is a {type(blob).__name__}")
    try:
        return _as_test_list(jsonio.loads_counted(blob, MAX_JSON_VALUES))
    except json.JSONDecodeError:
        pass
    try:
        packed = base64.b64decode(blob, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_DECOMPRESSED)
        if inflater.unconsumed_tail:
            raise ValueError(f"decompresses to more than {MAX_DECOMPRESSED >> 20} MiB")
    except (binascii.Error, zlib.error) as exc:
        raise ValueError(f"private_test_cases is neither JSON nor base64+zlib ({exc})") from None
    try:
        value = safe_loads(raw)
    except UnsafePickleError as exc:
        raise ValueError(f"private_test_cases: {exc}") from None
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"private_test_cases: unpickled bytes are not UTF-8 ({exc.reason})"
            ) from None
    if isinstance(value, str):
        try:
            value = jsonio.loads_counted(value, MAX_JSON_VALUES)  # counted while decoded
        except ValueError as exc:
            raise ValueError(f"private_test_cases: unpickled text is not JSON ({exc})") from None
    return _as_test_list(value)


def _as_test_list(value: Any) -> list[Any]:
    """The cases, if a list within the caps: the count, and the text all of them hold (a
    pickle's memo can repeat one large string a million times at no cost to the blob,
    and the verifier would copy each)."""
    if not isinstance(value, list):
        raise ValueError(f"test cases are a {type(value).__name__}, expected a list")
    if len(value) > MAX_TESTS:
        raise ValueError(f"{len(value)} test cases, more than the cap of {MAX_TESTS}")
    size = sum(
        len(c.get("input", "")) + len(c.get("output", ""))
        for c in value
        if isinstance(c, dict)
        and isinstance(c.get("input", ""), str)
        and isinstance(c.get("output", ""), str)
    )
    if size > MAX_TEST_CHARS:
        raise ValueError(
            f"test cases hold {size >> 20} MiB of text, over the {MAX_TEST_CHARS >> 20} MiB cap"
        )
    return value


def call_arguments(text: str) -> str:
    """A functional input (one JSON value per line) -> JSON list of the arguments."""
    try:
        return json.dumps([jsonio.loads(line) for line in text.split("\n") if line.strip()])
    except ValueError as exc:
        raise ValueError(f"functional input line is not JSON ({exc})") from None


def make_test(case: Any, kind: str, fn_name: str | None) -> Test:
    if not isinstance(case, dict) or not {"input", "output"} <= case.keys():
        raise ValueError(f"a {kind} test is not an {{input, output}} object")
    inp, out, testtype = case["input"], case["output"], case.get("testtype", "stdin")
    if not isinstance(inp, str) or not isinstance(out, str):
        raise ValueError(f"a {kind} test has non-text input or output")
    if testtype == "functional":
        if not fn_name:
            raise ValueError("functional tests but no func_name in metadata")
        try:
            jsonio.loads(out)
        except ValueError as exc:
            raise ValueError(f"functional expected output is not JSON ({exc})") from None
        return Test(call_arguments(inp), out.strip(), mode="call", fn_name=fn_name, kind=kind)
    if testtype != "stdin":
        raise ValueError(f"unknown testtype {quote(testtype)}")
    return Test(inp, out, kind=kind)


# --- one record ------------------------------------------------------------------------------


def source_ids(record: dict[str, Any], contest_date: str | None) -> SourceIds:
    platform = str(record.get("platform") or "").lower() or None
    qid = str(record.get("question_id") or "")
    cf = re.fullmatch(r"(\d+)_(\w+)", qid) if platform == "codeforces" else None
    return SourceIds(
        lcb_question_id=qid or None,
        platform=platform,
        contest_date=contest_date,
        cf_contest_id=int(cf.group(1)) if cf else None,
        cf_index=cf.group(2) if cf else None,
    )


def parse_record(record: dict[str, Any], window: tuple[str | None, str | None]) -> Problem | None:
    """One record -> Problem, or None when its contest date is outside `window`."""
    qid = str(record.get("question_id") or "").strip()
    if not qid:
        raise ValueError("no question_id")
    contest_date = iso_date(record.get("contest_date"))
    if not in_window(contest_date, *window):
        return None
    content = record.get("question_content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("empty question_content")
    meta = json_field(record, "metadata", default={})
    if not isinstance(meta, dict):
        raise ValueError("metadata is not an object")
    fn_name = meta.get("func_name") or None
    public = _as_test_list(json_field(record, "public_test_cases", default=[]))
    private = decode_private_tests(record.get("private_test_cases"))
    _as_test_list(public + private)  # the caps hold for both together
    tests = [make_test(c, "public", fn_name) for c in _as_test_list(public)]
    tests += [make_test(c, "private", fn_name) for c in private]
    if not tests:
        raise ValueError("no tests")
    return Problem(
        benchmark="lcb",
        problem_id=qid,
        statement=content,
        tests=tuple(tests),
        starter_code=record.get("starter_code") or "",
        source=source_ids(record, contest_date),
        difficulty=record.get("difficulty") or None,
        checker="lcb",
        metadata={
            k: v
            for k, v in {
                "title": record.get("question_title"),
                "contest_id": record.get("contest_id"),
                # the increment its contest date falls in: the run names the release
                "release": increment_of(contest_date),
            }.items()
            if v
        },
    )


# --- the loader ------------------------------------------------------------------------------


def _release_folder_rows(folder: Path, increments: list[int]) -> Iterator[RawRow] | None:
    """Rows of a local folder of release files (a clone of the hub repo), or None if the
    folder is not one."""
    if not (folder / "test.jsonl").is_file():
        return None
    files = [folder / increment_file(n) for n in increments]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise DataError(f"{folder}: the release files {', '.join(missing)} are missing")
    return chain.from_iterable(local_rows(f) for f in files)


def _source_rows(
    data: str | Path | None, tag: str, explicit: bool
) -> tuple[Iterable[RawRow], str, tuple[str, str] | None]:
    """(rows, source name, date window the tag implies) for the hub or a local copy."""
    increments = release_increments(tag)
    if data is None:
        files = [increment_file(n) for n in increments]
        return hub_file_rows(HUB_ID, files, FORMATS), f"{HUB_ID}:{tag}", None
    folder = _release_folder_rows(Path(data), increments) if Path(data).is_dir() else None
    if folder is not None:
        return folder, str(data), None
    # any other copy holds whatever it holds: a tag given explicitly acts as a date window
    return local_rows(data, "test"), str(data), version_window(tag) if explicit else None


def _window_reason(tag: str, start: str | None, end: str | None, dates: bool) -> str:
    """Why a record was left out: its contest date is outside the version's window."""
    why = f"contest date outside {start or '...'}..{end or '...'} (release_version={tag}"
    why += ", start_date/end_date)" if dates else ")"
    if tag.strip().startswith("v"):  # a common surprise: v6 is not release_v6
        why += f"; {tag} is that increment alone, release_{tag.split('_')[-1]} the release"
    return why


def load_lcb(
    data: str | Path | None = None,
    *,
    strict: bool = False,
    release_version: str | None = None,
    start_date: Any = None,
    end_date: Any = None,
    **options: Any,
) -> LoadResult:
    """LiveCodeBench code generation: `release_version` (default release_v6) and an optional
    inclusive `start_date`..`end_date` window on contest_date."""
    reject_unknown("lcb", options)
    tag = str(release_version or DEFAULT_RELEASE)
    rows, source, implied = _source_rows(data, tag, explicit=bool(release_version))
    start = parse_date_option("start_date", start_date)
    end = parse_date_option("end_date", end_date)
    if implied:
        start, end = max(start or implied[0], implied[0]), min(end or implied[1], implied[1])
    return collect(
        rows,
        lambda record, _n: parse_record(record, (start, end)),
        lambda record: str(record.get("question_id") or "") or None,
        strict=strict,
        source=source,
        filtered=_window_reason(tag, start, end, bool(start_date or end_date)),
    )


SPEC = BenchmarkSpec(
    name="lcb",
    description="LiveCodeBench code generation, release_v6 (options: release_version "
    "release_vN = increments 1..N, vN = increment N alone; start_date, end_date)",
    load=load_lcb,
    hub_id=HUB_ID,
    default_split="test",
)
