"""An augmented test set on disk, beside the data it extends:

    DIR/augment.json   how it was made (benchmark, data, seed, per-problem count, oracle...)
    DIR/tests.jsonl    one line per problem, appended as each problem finishes

A line: {"problem_id", "status": augmented | skipped, "reason", "oracle": references |
model, "tests": [{"input", "output", "mode", "fn_name", "how": {"mutation", "parent",
"seed"}}], ...counts}. The set's hash covers every test (inputs, outputs, modes) and the
benchmark, so a run judged with it is told apart from one judged without it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.files.fs import open_file, write_atomic
from cppo_bench.problem import Problem, Test
from cppo_bench.util.termsafe import quote

CONFIG = "augment.json"
TESTS = "tests.jsonl"
KIND = "augmented"  # Test.kind of a generated test
MAX_LINE = 256 << 20


@dataclass
class TestSet:
    path: Path
    config: dict[str, Any]
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # problem_id -> line

    def tests_for(self, problem_id: str) -> list[Test]:
        rec = self.records.get(problem_id)
        if not rec:
            return []
        return [
            Test(t["input"], t["output"], t.get("mode", "stdin"), t.get("fn_name"), KIND)
            for t in rec.get("tests", [])
        ]

    @property
    def bench(self) -> str:
        return str(self.config.get("bench", ""))

    def hash(self) -> str:
        body = [
            [
                pid,
                [
                    [t["input"], t["output"], t.get("mode"), t.get("fn_name")]
                    for t in rec.get("tests", [])
                ],
            ]  # fmt: skip
            for pid, rec in sorted(self.records.items())
        ]
        payload = json.dumps([self.bench, body], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def n_tests(self) -> int:
        return sum(len(r.get("tests", [])) for r in self.records.values())


def _check_test(t: Any) -> str:
    if not isinstance(t, dict):
        return "a test is not an object"
    if not isinstance(t.get("input"), str) or not isinstance(t.get("output"), str):
        return "a test's input and output must be text"
    if t.get("mode", "stdin") not in ("stdin", "call"):
        return f"test mode {quote(str(t.get('mode'))[:20])} is not stdin or call"
    if t.get("mode") == "call" and not isinstance(t.get("fn_name"), str):
        return "a call test needs fn_name"
    return ""


def read_test_set(path: str | Path) -> TestSet:
    """The test set in folder `path`; DataError naming the file (and line) when it is not
    one. A torn last line (a killed augment) is skipped, as a resume redoes that problem."""
    path = Path(path)
    from cppo_bench.files import userfiles

    if not os.path.lexists(path / CONFIG):
        raise DataError(f"{path}: not a test set ({CONFIG} missing; make one with "
                        "`cppo-bench augment`)")  # fmt: skip
    config = userfiles.read_json(path / CONFIG, userfiles.MAX_SMALL)  # a FIFO: one line
    if not isinstance(config, dict) or not isinstance(config.get("bench"), str):
        raise DataError(f"{path / CONFIG}: expected an object with a 'bench' name")
    ts = TestSet(path, config)
    try:
        fh = open_file(path / TESTS, "rb")
    except FileNotFoundError:
        return ts
    except OSError as exc:
        raise DataError(f"{path / TESTS}: cannot read: {exc}") from None
    with fh:
        lines = jsonio.split_lines(fh, MAX_LINE)  # streamed: counted as read
        for line in lines:
            where = f"{path / TESTS}:{line.lineno}"
            try:
                rec = jsonio.loads(line.text) if line.text is not None else None
            except ValueError:
                rec = None
            if rec is None and line.torn:
                continue  # torn last line
            if not isinstance(rec, dict):
                raise DataError(f"{where}: not a JSON object")
            why = "" if isinstance(rec.get("problem_id"), str) else "no problem_id"
            if not why:
                tests = rec.get("tests", [])
                why = (
                    "tests is not a list"
                    if not isinstance(tests, list)
                    else next((w for w in map(_check_test, tests) if w), "")
                )
            if why:
                raise DataError(f"{where}: {why}")
            ts.records[rec["problem_id"]] = rec
    return ts


def open_test_set(path: Path, config: dict[str, Any]) -> TestSet:
    """Start, or resume, the set in `path`: a resume must be the same configuration."""
    from cppo_bench.files.outdir import make_root  # a dangling link or a file: one line

    make_root(path)
    if (path / CONFIG).exists():
        ts = read_test_set(path)
        old = {k: v for k, v in ts.config.items() if k != "created_at"}
        new = {k: v for k, v in config.items() if k != "created_at"}
        if old != new:
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise DataError(f"{path}: holds a test set made with other settings "
                            f"({', '.join(diff)}); use another --out")  # fmt: skip
        _drop_torn_tail(path / TESTS)
        return read_test_set(path)
    write_atomic(path / CONFIG, json.dumps(config, indent=2, sort_keys=True) + "\n", root=path)
    return TestSet(path, config)


def _drop_torn_tail(path: Path) -> None:
    """A killed augment can leave half a line: cut it, so the next line starts clean (its
    problem is not in the set, so the resume redoes it)."""
    try:
        fh = open_file(path, "r+b", root=path.parent)
    except FileNotFoundError:
        return
    with fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def append(ts: TestSet, record: dict[str, Any]) -> None:
    with open_file(ts.path / TESTS, "a", encoding="utf-8", root=ts.path) as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
    ts.records[record["problem_id"]] = record


def with_tests(problems: list[Problem], ts: TestSet, only_augmented: bool = False) -> list[Problem]:
    """The problems judged with the set: original tests then augmented ones (or only the
    augmented ones; a problem without any then keeps its own, so it stays judgeable)."""
    out = []
    for p in problems:
        extra = tuple(ts.tests_for(p.problem_id))
        if not extra:
            out.append(p)
            continue
        tests = extra if only_augmented else p.tests + extra
        out.append(replace(p, tests=tests))
    return out


def identity(ts: TestSet | None) -> dict[str, Any]:
    """What a run records about the tests it was judged with (manifest extra["test_set"])."""
    if ts is None:
        return {}
    return {"test_set": {"path": str(ts.path), "hash": ts.hash(), "tests": ts.n_tests()}}
