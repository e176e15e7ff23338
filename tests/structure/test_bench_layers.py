"""The evaluation half's shape (issue 34): cppo_bench/ imports run one way, down the layers
drawn in docs/concepts.md, with no cycle (an import inside a function counts: it runs too),
and the top of the package holds only its public surface."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cppo_bench.util.layers import LAYERS
from tests.helpers.import_graph import graph, imports, module_name

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "cppo_bench"

# bottom -> top (cppo_bench/util/layers.py, the one house plan, drawn in docs/concepts.md)
LEVEL = {unit: i for i, units in enumerate(LAYERS) for unit in units}
PUBLIC_TOP = {"__init__.py", "__main__.py", "errors.py", "problem.py"}  # and api/, a package


def _module(path: Path) -> str:
    return module_name(path, REPO)


def _imports(path: Path) -> set[str]:
    """Every module a file imports (tests/helpers/import_graph.py says what counts: lazy
    imports, names taken from ancestor packages, modules named by a string)."""
    return imports(path, path.stem, set())


def _graph() -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    return graph(PACKAGE, REPO)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    found: list[str] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if found:
                return
            if state.get(d) == 1:
                found.extend(path[path.index(d) :] + [d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state and not found:
            visit(m, [m])
    return found


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {_unit(_module(p)) for p in PACKAGE.rglob("*.py")}
    assert units - set(LEVEL) == set(), "draw the new unit in LAYERS and docs/concepts.md"
    assert set(LEVEL) - units == set(), "a layer names a unit that no longer exists"


def test_no_import_goes_up_a_layer() -> None:
    up = sorted(
        f"{m} -> {d}"
        for m, deps in _graph().items()
        for d in deps
        if LEVEL[_unit(d)] > LEVEL[_unit(m)]
    )
    assert not up, up


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every loop once: the strongly connected sets of two or more modules, sorted."""
    reach: dict[str, set[str]] = {}
    for m in graph:
        seen, todo = {m}, [m]
        while todo:
            for d in graph[todo.pop()]:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        reach[m] = seen
    found = {frozenset(x for x in reach[m] if m in reach[x]) for m in graph}
    return sorted(sorted(c) for c in found if len(c) > 1)


# units a unit never imports though the table would allow it (issue 48): the run store files
# what the methods and backends produced and asks them nothing (a run records its pass@k rule
# when made); the metrics are pure (a frame is read on the caller's side, cppo_bench.stats.read)
# and take from the store only the row type they score.
NEVER = {
    "store": ("cppo_bench.methods", "cppo_bench.backends"),
    "metrics": ("cppo_bench.files", "cppo_bench.store", "cppo_bench.runner"),
}
NEVER_EXCEPT = {"metrics": ("cppo_bench.store.outcomes",)}


def _is(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_store_asks_no_producer_and_the_metrics_read_no_file() -> None:
    wrong = sorted(
        f"{m} -> {d}"
        for m, deps in _graph().items()
        for d in deps
        if _is(d, NEVER.get(_unit(m), ())) and not _is(d, NEVER_EXCEPT.get(_unit(m), ()))
    )
    assert not wrong, wrong


def test_no_import_cycle_in_the_harness() -> None:
    # (every loop, not the first found: a registry's front naming its plugins by string,
    # each plugin importing the registry back from that front, was seven of them)
    assert _loops(_graph()) == []


def test_the_cycle_check_sees_a_lazy_import(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("def f():\n    import a\n")
    graph = {"a": _imports(a) & {"b"}, "b": _imports(b) & {"a"}}
    assert _cycle(graph) == ["a", "b", "a"]


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return graph(tmp_path / "pkg", tmp_path)


# An adversary's ways up to a package front from below it (issue 48: `runner/rejudge.py`
# took the version from the top, closing a loop through its lazy export table), and of
# naming a module with no import statement. Each must show as an edge, and close the loop.
ANCESTOR_AND_STRING_CASES = {
    "a name from the package top": "from pkg import VERSION\n",
    "a name from the top, lazily": "def f():\n    from pkg import VERSION\n",
    "the top by a relative import": "from .. import VERSION\n",
    "the top, imported whole": "import pkg\n",
    "the top by importlib": "import importlib\nimportlib.import_module('pkg')\n",
    "a registration by string": "TABLE = {'x': 'pkg.api:thing'}\n",
    "a lazy module string": "TABLE = ['pkg.api:']\n",
}


@pytest.mark.parametrize("case", sorted(ANCESTOR_AND_STRING_CASES))
def test_the_graph_sees_ancestor_imports_and_strings(tmp_path: Path, case: str) -> None:
    code = ANCESTOR_AND_STRING_CASES[case]
    g = _tree(tmp_path, {
        "pkg/__init__.py": "VERSION = 1\nEXPORTS = {'thing': 'pkg.api:thing'}\n",
        "pkg/api.py": "from pkg.low import mod\n",
        "pkg/low/__init__.py": "",
        "pkg/low/mod.py": code,
    })  # fmt: skip
    target = "pkg.api" if "pkg.api" in code else "pkg"
    assert target in g["pkg.low.mod"], (case, g["pkg.low.mod"])
    assert _cycle(g), case  # mod -> (pkg ->) api -> mod


def test_a_submodule_from_its_own_package_is_no_edge_to_the_front(tmp_path: Path) -> None:
    # (Python has initialised the ancestors before the module runs: no loop, no arrow up)
    g = _tree(tmp_path, {
        "pkg/__init__.py": "from pkg.low import mod\n",
        "pkg/low/__init__.py": "",
        "pkg/low/mod.py": "from pkg.low import other\nfrom pkg import low\n",
        "pkg/low/other.py": '"""pkg.low.mod"""\nx = "pkg.low is prose here"\n',
    })  # fmt: skip
    assert g["pkg.low.mod"] == {"pkg.low.other", "pkg.low"}
    assert g["pkg.low.other"] == set()  # a docstring, and a sentence, are no registration
    assert not _cycle(g)


def test_the_top_of_the_package_is_its_public_surface() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == PUBLIC_TOP, sorted(top ^ PUBLIC_TOP)


def test_concepts_md_draws_the_same_layers() -> None:
    text = (REPO / "docs" / "concepts.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    drawn = [line for line in section.splitlines() if re.match(r"^\s*\d+\s*\|", line)]
    order = [tuple(re.findall(r"[\w]+", line.split("|", 1)[1])) for line in drawn]
    assert order == LAYERS
