"""APPS (`codeparrot/apps`): the study evaluates a fixed, seeded 200-problem slice of the
test split's `introductory` problems.

Sources: the hub dataset; a local copy in the hub schema (JSONL / JSON / parquet /
save_to_disk), one row per problem with `input_output` and `solutions` as JSON strings; or the
original release layout, one folder per problem (`NNNN/question.txt, input_output.json,
solutions.json, metadata.json, starter_code.py`), optionally under `train/` and `test/`.

The slice is chosen by id, not by file order: the ids of the rows of the wanted difficulty
are sorted and `random.Random(subset_seed).sample`d, so any copy of the split gives the same
problems. Each Problem's metadata records the selection; the run manifest lists the ids.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cppo_bench.benchmarks._io import (
    LOCAL_FORMATS,
    RawRow,
    as_int,
    collect,
    hub_rows,
    json_field,
    local_rows,
    reject_unknown,
)
from cppo_bench.benchmarks.spec import BenchmarkSpec
from cppo_bench.errors import DataError
from cppo_bench.files import jsonio, userfiles
from cppo_bench.problem import LoadResult, Problem, RecordError, SourceIds, Test
from cppo_bench.util.termsafe import quote

HUB_ID = "codeparrot/apps"
DIFFICULTIES = ("introductory", "interview", "competition")
FORMATS = f"{LOCAL_FORMATS}/APPS release folder"
# the repo's own JSONL files, read directly if `datasets` refuses the repo's loading script
RAW_FILES = {"train": ["train.jsonl"], "test": ["test.jsonl"]}
_CF_URL = re.compile(r"codeforces\.com/(?:problemset/problem|contest|gym)/(\d+)(?:/problem)?/(\w+)")


# --- the release folder layout ---------------------------------------------------------------


def _problem_dirs(root: Path) -> list[Path]:
    # userfiles.is_file: a problem whose question.txt is a FIFO is read (and refused by name)
    return [d for d in root.iterdir() if d.is_dir() and userfiles.is_file(d / "question.txt")]


_SPLIT_WORD = re.compile(r"(?:^|[^a-z])(train|test)(?:[^a-z]|$)")


def split_of(data: str | Path | None, split: str | None) -> str:
    """The split a load reads and records: the one asked for; else, for a local copy whose
    file or folder names one (`APPS/train/`, `apps_train.jsonl`), that one, so a train file is
    never recorded (and decontaminated) as the test split; else test."""
    if split:
        return str(split)
    if data is not None:
        for part in reversed(Path(data).resolve().parts[-3:]):
            found = _SPLIT_WORD.findall(part.lower())
            if len(set(found)) == 1:
                return found[0]
    return "test"


def release_root(path: Path, split: str) -> Path | None:
    """The folder of problem folders if `path` is (or holds `split/` in) the release layout."""
    if not path.is_dir():
        return None
    for root in (path / split, path):
        if root.is_dir() and _problem_dirs(root):
            return root
    return None


def _read(path: Path, cap: int = userfiles.MAX_SMALL) -> str:
    """A problem file's text ('' if absent); a FIFO, device or oversized file is named."""
    return userfiles.read_text(path, cap) if userfiles.is_file(path) else ""


def folder_rows(root: Path) -> Iterator[RawRow]:
    """One hub-schema record per problem folder, in id order."""
    dirs = sorted(_problem_dirs(root), key=lambda d: (not d.name.isdigit(), d.name.zfill(8)))
    for d in dirs:
        try:
            meta = jsonio.loads(_read(d / "metadata.json") or "{}")
            if not isinstance(meta, dict):
                raise ValueError("metadata.json is not an object")
            record = {
                "problem_id": int(d.name) if d.name.isdigit() else d.name,
                "question": _read(d / "question.txt"),
                "solutions": _read(d / "solutions.json", userfiles.MAX_FILE),
                "input_output": _read(d / "input_output.json", userfiles.MAX_FILE),
                "difficulty": meta.get("difficulty"),
                "url": meta.get("url", ""),
                "starter_code": _read(d / "starter_code.py"),
            }
        except (OSError, UnicodeDecodeError, ValueError, DataError) as exc:
            yield RawRow(str(d), "problem folder", error=f"unreadable: {exc}")
            continue
        yield RawRow(str(d), "problem folder", record)


# --- one record -> Problem -------------------------------------------------------------------


def source_ids(problem_id: int | None, url: str) -> SourceIds:
    host = urlparse(url).hostname or ""
    labels = host.removeprefix("www.").split(".")
    platform = labels[-2] if len(labels) >= 2 else (host or None)
    cf = _CF_URL.search(url)
    return SourceIds(
        apps_id=problem_id,
        cf_contest_id=int(cf.group(1)) if cf else None,
        cf_index=cf.group(2) if cf else None,
        platform=platform,
        url=url or None,
    )


def _text(value: Any, what: str) -> str:
    # a few stdin problems store a test as a list of lines
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if not isinstance(value, str):
        raise ValueError(f"{what} is a {type(value).__name__}, expected text")
    return value


def parse_tests(io: Any) -> tuple[Test, ...]:
    """`input_output` -> Tests; call-based when it names `fn_name`. Expected values are kept
    exactly as the record has them (Codewars wraps them in one-element lists; the APPS
    checker unwraps)."""
    if io is None:
        raise ValueError("empty input_output (no tests)")
    if not isinstance(io, dict) or not isinstance(io.get("inputs"), list):
        raise ValueError("input_output has no 'inputs' list")
    inputs, outputs = io["inputs"], io.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(inputs):
        n_out = len(outputs) if isinstance(outputs, list) else "no"
        raise ValueError(f"input_output has {len(inputs)} inputs but {n_out} outputs")
    if not inputs:
        raise ValueError("input_output has no tests")
    fn_name = io.get("fn_name")
    if fn_name:
        if not all(isinstance(args, list) for args in inputs):
            raise ValueError(f"call-based ({fn_name}) inputs must be argument lists")
        return tuple(
            Test(json.dumps(args), json.dumps(out), mode="call", fn_name=fn_name)
            for args, out in zip(inputs, outputs, strict=True)
        )
    return tuple(
        Test(_text(i, f"input {n}"), _text(o, f"output {n}"))
        for n, (i, o) in enumerate(zip(inputs, outputs, strict=True))
    )


ProblemId = int | str  # APPS ids are integers; re-keyed copies may name problems by string


def _as_id(value: Any) -> ProblemId | None:
    """An id as given: an integer (also "0012" -> 12, so text and numbers agree), else its
    text; None when empty or not a scalar."""
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    text = str(value).strip()
    if not text:
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def _id_key(pid: ProblemId) -> tuple[int, int, str]:
    """Integers in numeric order (the study's slice), then text ids in text order."""
    return (0, pid, "") if isinstance(pid, int) else (1, 0, pid)


def _problem_id(record: dict[str, Any]) -> ProblemId | None:
    return _as_id(record.get("problem_id", record.get("id")))


def parse_record(record: dict[str, Any], selection: dict[str, Any] | None = None) -> Problem:
    pid = _problem_id(record)
    if pid is None:
        raise ValueError("no problem_id")
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("empty question")
    tests = parse_tests(json_field(record, "input_output"))
    solutions = json_field(record, "solutions", default=[])
    if not isinstance(solutions, list) or not all(isinstance(s, str) for s in solutions):
        raise ValueError("solutions is not a list of source strings")
    url = record.get("url") or ""
    return Problem(
        benchmark="apps",
        problem_id=str(pid),
        statement=question,
        tests=tests,
        starter_code=record.get("starter_code") or "",
        reference_solutions=tuple(solutions),
        source=source_ids(pid if isinstance(pid, int) else None, url),
        difficulty=record.get("difficulty"),
        checker="apps",
        # decontamination keys APPS ids by split: train and test ids both start at 0
        metadata={"split": selection.get("split"), "selection": dict(selection)}
        if selection
        else {},
    )


# --- selection and the loader ----------------------------------------------------------------


def _parse_ids(ids: Any) -> list[ProblemId] | None:
    if ids is None or ids == "":
        return None
    items = (
        ids.split(",") if isinstance(ids, str) else list(ids) if isinstance(ids, list) else [ids]
    )
    parsed = {_as_id(i) for i in items}
    if None in parsed:
        raise DataError(f"option ids={quote(ids)}: expected comma-separated problem ids")
    return sorted(parsed, key=_id_key)  # type: ignore[arg-type]


def choose_subset(ids: list[ProblemId], size: int | None, seed: int) -> list[ProblemId]:
    """The seeded slice: independent of row order and of records outside the pool."""
    pool = sorted(set(ids), key=_id_key)
    if not size or size >= len(pool):
        return pool
    return sorted(random.Random(seed).sample(pool, size), key=_id_key)


def _record_name(record: dict[str, Any]) -> str | None:
    pid = _problem_id(record)
    return None if pid is None else str(pid)


def _id_of(row: RawRow) -> ProblemId | None:
    return _problem_id(row.record) if isinstance(row.record, dict) and not row.error else None


def select_rows(
    rows: list[RawRow], size: int | None, seed: int, wanted: list[ProblemId] | None
) -> tuple[list[RawRow], dict[str, Any], list[ProblemId]]:
    """(rows to map, the selection to record, requested ids that are missing). Rows without a
    readable id always pass, so that they are reported rather than silently dropped."""
    present = {pid for r in rows if (pid := _id_of(r)) is not None}
    keep = set(wanted) if wanted is not None else set(choose_subset(list(present), size, seed))
    selection: dict[str, Any] = {"pool": len(present)}
    selection |= {"ids": "explicit"} if wanted is not None else {"subset": size or 0, "seed": seed}
    chosen = [r for r in rows if _id_of(r) is None or _id_of(r) in keep]
    return chosen, selection, sorted(keep - present, key=_id_key)


def load_apps(
    data: str | Path | None = None,
    *,
    strict: bool = False,
    split: str | None = None,
    difficulty: str | None = "introductory",
    subset: int | str | None = 200,
    subset_seed: int | str = 0,
    ids: Any = None,
    **options: Any,
) -> LoadResult:
    """APPS `split`, problems of `difficulty` ('all' or None: every level), then the seeded
    `subset` of that many problems (0 or None: all); `ids` picks problems explicitly.
    `split` None: test, or what a local copy's path names (`split_of`)."""
    reject_unknown("apps", options)
    split = split_of(data, split)
    size, seed = as_int("subset", subset), as_int("subset_seed", subset_seed) or 0
    if size is not None and size < 0:
        raise DataError(f"option subset={quote(subset)}: must be >= 0")
    level = None if difficulty in (None, "", "all") else str(difficulty)
    if level is not None and level not in DIFFICULTIES:
        raise DataError(
            f"option difficulty={quote(difficulty)}: one of {', '.join(DIFFICULTIES)}, all"
        )
    if data is None:
        rows, source = (
            hub_rows(HUB_ID, split, formats=FORMATS, raw_files=RAW_FILES),
            f"{HUB_ID}[{split}]",
        )
    else:
        root = release_root(Path(data), split)
        rows, source = (folder_rows(root) if root else local_rows(data, split)), str(data)

    def wanted_level(r: RawRow) -> bool:
        return (
            level is None or not isinstance(r.record, dict) or r.record.get("difficulty") == level
        )

    pool: list[RawRow] = []  # only the wanted level is kept in memory
    levels: Counter[str] = Counter()
    for r in rows:
        if isinstance(r.record, dict):
            levels[str(r.record.get("difficulty"))] += 1
        if r.error or wanted_level(r):
            pool.append(r)
    if levels and not pool:  # a source of other levels only: say so instead of loading nothing
        raise DataError(
            f"{source}: no {level} problems among {levels.total()} rows "
            f"({', '.join(f'{k} {v}' for k, v in levels.most_common())}); "
            "pass -o difficulty=all or another level"
        )
    chosen, selection, missing = select_rows(pool, size, seed, _parse_ids(ids))
    selection = {"split": split, "difficulty": level or "all"} | selection
    result = collect(
        chosen,
        lambda record, _n: parse_record(record, selection),
        _record_name,
        strict=strict,
        source=source,
    )
    for pid in missing:
        err = RecordError(source, str(pid), f"requested id not among the {level or 'all'} rows")
        if strict:
            raise DataError(str(err))
        result.errors.append(err)
    result.problems.sort(key=lambda p: _id_key(_as_id(p.problem_id) or ""))
    if level is not None and levels.total() > levels[level]:
        result.dropped[f"difficulty is not {level} (-o difficulty=all keeps them)"] = (
            levels.total() - levels[level]
        )
    if ids is None and size and selection["pool"] > size:
        result.dropped[f"outside the seeded subset of {size} (-o subset=0 keeps them)"] = (
            selection["pool"] - size
        )
    elif ids is not None:
        picked = sum(_id_of(r) is not None for r in chosen)
        if selection["pool"] > picked:
            result.dropped["not among the requested ids"] = selection["pool"] - picked
    if level is not None and levels.total() > levels[level]:
        others = ", ".join(f"{k} {v}" for k, v in levels.most_common() if k != level)
        result.notes.append(
            f"{levels[level]} of {levels.total()} rows are {level}; not shown: {others} "
            "(-o difficulty=all shows every level)"
        )
    if ids is None and size and selection["pool"] > size:
        result.notes.append(
            f"a seeded subset of {size} of the {selection['pool']} problems (-o subset=0 shows all)"
        )
    return result


SPEC = BenchmarkSpec(
    name="apps",
    description="APPS test split, introductory, seeded 200-problem slice (options: split, "
    "difficulty, subset, subset_seed, ids)",
    load=load_apps,
    hub_id=HUB_ID,
    default_split="test",
)
