"""The programs a user gives `verify` (a JSONL file of {"problem_id", "code"} lines, or the
problems' reference solutions) matched to the problems they name. Every line is outside text:
a bad one is named (FILE:LINE and why) and the others are still read."""

from __future__ import annotations

import inspect
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import quote

MAX_PROGRAM_LINE = 64 << 20  # one {"problem_id", "code"} line


def _program_lines(path: Path) -> list[tuple[int, str | None, str | None]]:
    """(line number, text or None, error) per line: split on \\n only, each line decoded on
    its own, so one bad line is named and the others are still read."""
    from cppo_bench.files import userfiles

    return [(ln.lineno, ln.text, ln.error) for ln in userfiles.lines(path, MAX_PROGRAM_LINE)]


def problem_index(problems: list[Problem]) -> tuple[dict[str, Problem], set[str]]:
    """problem_id and uid -> problem, and the keys naming two different problems (a
    problem_id equal to another's uid): a program for such a key is refused, never judged
    against whichever problem came last."""
    index: dict[str, Problem] = {}
    ambiguous: set[str] = set()
    for p in problems:
        for key in (p.problem_id, p.uid):
            if key in index and index[key] is not p:
                ambiguous.add(key)
            index.setdefault(key, p)
    return {k: v for k, v in index.items() if k not in ambiguous}, ambiguous


def _record(line: str, where: str, problems: dict[str, Any],
            ambiguous: AbstractSet[str]) -> tuple[dict[str, Any] | None, str | None]:  # fmt: skip
    """One line as (record, None) or (None, the error naming `where`)."""
    from cppo_bench.files.jsonio import loads

    try:
        record = loads(line)
    except ValueError as exc:
        return None, f"{where}: not valid JSON ({getattr(exc, 'msg', exc)})"
    if not isinstance(record, dict) or "problem_id" not in record or "code" not in record:
        return None, f"{where}: expected an object with 'problem_id' and 'code'"
    if not isinstance(record["code"], str):
        return None, f"{where}: 'code' must be a string"
    pid_value = record["problem_id"]
    if not isinstance(pid_value, str | int) or isinstance(pid_value, bool):
        return None, f"{where}: 'problem_id' must be a string or an integer"
    pid = str(pid_value)
    if pid in ambiguous:
        return None, f"{where}: problem id {quote(pid)} names two different problems; refused"
    if pid not in problems:
        return None, f"{where}: unknown problem id {quote(pid)}"
    return dict(record, problem_id=pid), None


def read_programs(
    path: Path, problems: dict[str, Any], ambiguous: AbstractSet[str] = frozenset()
) -> tuple[list[dict[str, Any]], list[str]]:
    """(records with a known problem, errors naming FILE:LINE). Bad lines never stop the rest."""
    records, errors = [], []
    for lineno, line, why in _program_lines(path):
        where = f"{path}:{lineno}"
        if line is None:
            errors.append(f"{where}: {why}")
            continue
        if not line.strip():
            continue
        record, error = _record(line, where, problems, ambiguous)
        if record is not None:
            records.append(record)
        if error is not None:
            errors.append(error)
    return records, errors


def named_problems(path: Path) -> list[str]:
    """The problem ids a programs file names (lines that are not such records are left to
    `read_programs` to report)."""
    from cppo_bench.errors import UserError
    from cppo_bench.files.jsonio import loads

    try:
        lines = _program_lines(path)
    except UserError:
        return []
    ids: set[str] = set()
    for _, line, _ in lines:
        try:
            record = loads(line) if line is not None else None
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("problem_id"), str | int):
            ids.add(str(record["problem_id"]))
    return sorted(ids)


def selection_for(bench: str, options: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """Loader options that load the problems the programs name: a loader that selects by id
    gets those ids (and every difficulty), instead of its default slice, unless the user
    chose a selection of their own."""
    from cppo_bench.benchmarks import BENCHMARKS

    params = inspect.signature(BENCHMARKS.get(bench).load).parameters
    if not ids or "ids" not in params or "ids" in options:
        return options
    chosen = dict(options, ids=ids)
    if "difficulty" in params:
        chosen.setdefault("difficulty", "all")
    return chosen


def reference_records(problems: dict[str, Problem]) -> list[dict[str, Any]]:
    """One record per reference solution of each problem (each problem once, though the
    index holds it under its id and its uid)."""
    seen, out = set(), []
    for problem in problems.values():
        if id(problem) in seen:
            continue
        seen.add(id(problem))
        for k, code in enumerate(problem.reference_solutions):
            out.append({"problem_id": problem.problem_id, "reference_index": k, "code": code})
    return out
