"""What a module of this repository imports, as the structure tests count it (issue 48).

One reader for every layer test (tests/structure/test_bench_layers.py for the harness,
tests/trainers/test_trainers_structure.py for the trainers), so that what counts as an
import is decided once. An import is:
- `import a.b` and `from a import b` statements, top-level or inside a function (a lazy
  import runs too), relative ones resolved; not those under `if TYPE_CHECKING:` (never run);
- a name taken from an ANCESTOR package (`from cppo_bench import __version__` inside
  cppo_bench/runner/): it runs that package's __init__ and whatever it hands out (its lazy
  export table); only `from pkg import submodule` inside pkg is no edge to pkg itself;
- a module named by a string: "pkg.mod" or "pkg.mod:attr" (or a known module's whole
  name), as registries, lazy export tables, `importlib.import_module` and command tables
  name what they will import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

# "pkg.mod" or "pkg.mod:attr" ("pkg.mod:" for the module itself), the whole string
MODULE_STRING = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::\w*)?")


def module_name(path: Path, repo: Path) -> str:
    rel = path.resolve().relative_to(repo).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules `path` (module `module`) imports, by statement or by string. `known`:
    every module of the tree (to tell a submodule from a name inside a package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree) | _docstrings(tree) | _programs(tree) | _not_imports(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, package)
            if source is None:
                continue
            subs = {f"{source}.{a.name}" for a in node.names} & known
            out |= subs
            ancestor = module == source or module.startswith(source + ".")
            # (the package itself, unless every name taken is a submodule of an ancestor,
            # which Python has initialised, or is initialising, before this module)
            if not ancestor or len(subs) < len(node.names):
                out.add(source)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = MODULE_STRING.fullmatch(node.value)
            if m is not None:
                out.add(m.group(1))
            elif node.value in known:  # a top package by name ("pkg": no dot to tell it)
                out.add(node.value)
    return out


def graph(package: Path, repo: Path) -> dict[str, set[str]]:
    """module -> the modules of the same tree it imports (itself left out)."""
    mods = {module_name(p, repo): p for p in package.rglob("*.py")}
    known = set(mods)
    return {m: {i for i in imports(p, m, known) if i in mods and i != m} for m, p in mods.items()}


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return node.module
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return None  # (above the tree: Python refuses it too)
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


# calls whose string argument names a module without importing anything of it: a logger's
# name, a package's data folder (importlib.resources.files)
NAME_ONLY_CALLS = {"getLogger", "files"}


def _not_imports(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in NAME_ONLY_CALLS:
                out |= {id(a) for a in node.args}
    return out


def _programs(tree: ast.AST) -> set[int]:
    """`[python, "-m", "pkg", ...]`: a module run as another process's program is no import
    (nothing of it loads here)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            for flag, arg in zip(node.elts, node.elts[1:], strict=False):
                if isinstance(flag, ast.Constant) and flag.value == "-m":
                    out.add(id(arg))
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    """Docstrings are prose, never a registration (a one-word one could look like one)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out
