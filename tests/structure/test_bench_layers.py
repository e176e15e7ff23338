"""The evaluation half's shape (issue 34): cppo_bench/ imports run one way, down the layers
drawn in docs/concepts.md, with no cycle (an import inside a function counts: it runs too),
and the top of the package holds only its public surface."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "cppo_bench"

# bottom -> top; a unit may import its own layer's units or any lower layer's, never a higher
# one. A unit is a top-level module or sub-package of cppo_bench ("__init__" is the package
# front). The same order is drawn in docs/concepts.md ("## Layers").
LAYERS: list[tuple[str, ...]] = [
    ("errors", "util", "files"),
    ("problem", "plan"),
    ("benchmarks", "prompts", "backends", "verifier"),
    ("methods",),
    ("store",),
    ("metrics", "diversity", "decontam"),
    ("augment",),
    ("runner", "lm_eval_tasks", "serve"),
    ("stats", "report"),
    ("api",),
    ("__init__",),
    ("cli",),
    ("__main__",),
]
LEVEL = {unit: i for i, units in enumerate(LAYERS) for unit in units}
PUBLIC_TOP = {"__init__.py", "__main__.py", "api.py", "errors.py", "problem.py"}


def _module(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module a file imports, top-level or lazily inside a function (not the
    TYPE_CHECKING-only ones: they never run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _graph() -> dict[str, set[str]]:
    """module -> the package modules it imports. A module's own ancestor packages are left
    out: Python initialises them before the module whatever it imports (`from pkg import
    submodule` inside pkg is no cycle)."""
    mods = {_module(p): p for p in PACKAGE.rglob("*.py")}
    return {
        m: {i for i in _imports(p) if i in mods and i != m and not m.startswith(i + ".")}
        for m, p in mods.items()
    }


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
    cycle = _cycle(_graph())
    assert not cycle, " -> ".join(cycle)


def test_the_cycle_check_sees_a_lazy_import(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("def f():\n    import a\n")
    graph = {"a": _imports(a) & {"b"}, "b": _imports(b) & {"a"}}
    assert _cycle(graph) == ["a", "b", "a"]


def test_the_top_of_the_package_is_its_public_surface() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == PUBLIC_TOP, sorted(top ^ PUBLIC_TOP)


def test_concepts_md_draws_the_same_layers() -> None:
    text = (REPO / "docs" / "concepts.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    drawn = [line for line in section.splitlines() if re.match(r"^\s*\d+\s*\|", line)]
    order = [tuple(re.findall(r"[\w]+", line.split("|", 1)[1])) for line in drawn]
    assert order == LAYERS
