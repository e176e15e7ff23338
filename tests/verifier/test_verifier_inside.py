"""The sandbox side of the verifier (cppo_bench/verifier/inside/) is standard library only,
and launch.SANDBOX_FILES names every file of it: each file is bound or copied into the
sandbox on its own, where neither the project nor any installed package can be imported."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from cppo_bench.verifier import launch

# numpy is bound into every sandbox for the PROGRAMS (APPS' prelude binds `np`); the inside
# code may hand it to them, lazily, never depend on it
FOR_PROGRAMS = {"numpy"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add((node.module or "").split(".")[0])
    return names


def test_the_inside_files_are_exactly_the_sandbox_files() -> None:
    files = {p.name for p in launch.INSIDE_DIR.glob("*.py") if p.name != "__init__.py"}
    assert files == set(launch.SANDBOX_FILES)


def test_the_inside_files_import_only_the_standard_library_and_each_other() -> None:
    siblings = {Path(name).stem for name in launch.SANDBOX_FILES}
    allowed = set(sys.stdlib_module_names) | siblings | {"__future__"}
    for name in launch.SANDBOX_FILES:
        bad = _imports(launch.INSIDE_DIR / name) - allowed - FOR_PROGRAMS
        assert not bad, f"{name} imports {sorted(bad)}: the sandbox has only the stdlib"


def test_numpy_is_imported_only_lazily_inside() -> None:
    for name in launch.SANDBOX_FILES:
        tree = ast.parse((launch.INSIDE_DIR / name).read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not any(_imports_of(n) & FOR_PROGRAMS for n in top), name


def _imports_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    return {(node.module or "").split(".")[0]}


def test_the_host_side_is_not_inside() -> None:
    """What judges (compare, decode, runner) stays outside: the sandbox never holds it."""
    for host in ("compare.py", "decode.py", "runner.py", "launch.py", "sandbox.py"):
        assert not (launch.INSIDE_DIR / host).exists()
        assert (launch.HERE / host).exists()
