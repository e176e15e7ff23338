"""Readers read only what the schema declares (issue 44 item 1): the typed objects a run
store is parsed into have exactly the schema's fields, and every key a reader takes out of a
manifest's or record's open `extra` object (or a plan validity report) is declared there,
with its type and range. A reader that starts to read an undeclared key fails here: declare
it in cppo_bench/store/schema.py first, so the door checks it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from code_walk import dotted

from cppo_bench.store.runs import Branch, ProblemRecord, RunManifest
from cppo_bench.store.schema import MANIFEST_EXTRA, RECORD_EXTRA, SCHEMAS, VALIDITY

ROOT = Path(__file__).resolve().parents[2]
# the readers of run stores: every module that reads a manifest or a record it did not write
READERS = [
    *sorted((ROOT / "cppo_bench" / "store").glob("*.py")),
    *sorted((ROOT / "cppo_bench" / "report").glob("*.py")),
    *sorted((ROOT / "cppo_bench" / "cli").glob("*.py")),
    *sorted((ROOT / "cppo_bench" / "stats").glob("*.py")),
    ROOT / "cppo_bench" / "plan" / "validity.py",
    ROOT / "cppo_bench" / "benchmarks" / "testsource.py",
    ROOT / "cppo_bench" / "runner" / "rejudge.py",
    ROOT / "cppo_bench" / "runner" / "samples.py",
    ROOT / "cppo_bench" / "runner" / "rundata.py",
    ROOT / "cppo_bench" / "augment" / "audit.py",
    *sorted((ROOT / "cppo_bench" / "api").glob("*.py")),
]
EXTRA_KEYS = set(MANIFEST_EXTRA.fields) | set(RECORD_EXTRA.fields)
# the readers of plan validity reports, and the name they give one tuple's report
VALIDITY_READERS = {"cppo_bench/plan/validity.py", "cppo_bench/report/measures.py"}
REPORT_NAMES = {"report"}


def _keys_read(tree: ast.AST, reports: bool = True) -> list[tuple[int, str, str]]:
    """(line, receiver, key) for `X.extra.get("key")`, `X.extra["key"]` (read, not
    written), `extra.get("key")` and a validity `report.get("key")`."""
    found = []
    for node in ast.walk(tree):
        receiver, key = None, None
        if not isinstance(node, ast.Call | ast.Subscript):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            receiver, key = dotted(node.func.value), node.args[0].value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
        ):
            receiver, key = dotted(node.value), node.slice.value
        if receiver is None or not isinstance(key, str):
            continue
        last = receiver.rsplit(".", 1)[-1]
        if last == "extra" or (reports and last in REPORT_NAMES):
            found.append((node.lineno, receiver, key))
    return found


def test_the_typed_objects_have_exactly_the_schemas_fields():
    for cls, schema in ((RunManifest, "run_manifest"), (ProblemRecord, "run_record"),
                        (Branch, "run_branch")):  # fmt: skip
        fields = {f.name for f in dataclasses.fields(cls)}
        assert fields == set(SCHEMAS.get(schema).fields), cls


def test_every_extra_key_a_reader_reads_is_declared():
    undeclared = []
    for path in READERS:
        tree = ast.parse(path.read_text(), str(path))
        rel = str(path.relative_to(ROOT))
        for line, receiver, key in _keys_read(tree, reports=rel in VALIDITY_READERS):
            declared = set(VALIDITY.fields) if receiver in REPORT_NAMES else EXTRA_KEYS
            if key not in declared:
                undeclared.append(f"{rel}:{line}: {receiver}[{key!r}]")
    assert not undeclared, "declare these in cppo_bench/store/schema.py:\n" + "\n".join(undeclared)


def test_the_walk_sees_each_way_of_reading_a_key():
    src = (
        "a = m.extra.get('x1')\nb = rec.extra['x2']\nc = extra.get('x3')\n"
        "d = report.get('x4')\nrec.extra['x5'] = 1\ne = res.value['x6']\n"
    )
    keys = [key for _, _, key in _keys_read(ast.parse(src))]
    assert keys == ["x1", "x2", "x3", "x4"]


def test_every_declared_reader_key_is_checked_deeply():
    """A declared field has a checker that refuses a value of another type."""
    for schema in (MANIFEST_EXTRA, RECORD_EXTRA, VALIDITY):
        for key, check in schema.fields.items():
            assert check(object()) is not None, f"{schema.name}.{key} takes anything"
