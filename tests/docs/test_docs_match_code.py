"""docs/concepts.md describes the code as it is (issue 48 item 5): its package table names
every module of the leaf packages and every class of the error hierarchy, so a module or an
error class added without a line in the docs fails here (docs/commands.md's command table is
checked the same way in tests/cli/test_cli_vocabulary.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cppo_bench.errors

ROOT = Path(__file__).resolve().parents[2]
CONCEPTS = (ROOT / "docs" / "concepts.md").read_text()


def _row(path: str) -> str:
    rows = [ln for ln in CONCEPTS.splitlines() if ln.startswith(f"| `{path}` |")]
    assert len(rows) == 1, f"docs/concepts.md has {len(rows)} rows for {path}"
    return rows[0]


@pytest.mark.parametrize("package", ["cppo_bench/util/", "cppo_bench/files/"])
def test_the_leaf_package_rows_name_every_module(package: str) -> None:
    named = set(re.findall(r"`([a-z_]+)`", _row(package)))
    modules = {p.stem for p in (ROOT / package).glob("*.py") if p.stem != "__init__"}
    assert modules <= named, f"{package}: not in docs/concepts.md: {sorted(modules - named)}"


def test_the_errors_row_names_every_class() -> None:
    named = set(re.findall(r"`([A-Za-z]+)`", _row("cppo_bench/errors.py")))
    missing = set(cppo_bench.errors.__all__) - named
    assert not missing, f"error classes not in docs/concepts.md: {sorted(missing)}"
