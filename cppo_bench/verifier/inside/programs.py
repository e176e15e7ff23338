"""How a program is compiled, in the server inside the sandbox (stdlib only): once per
program, never run here (harness.Server.load).

The official APPS and LiveCodeBench harnesses run a stdin program inside a function, its
top-level imports hoisted out of it (LiveCodeBench's `make_function`). We do the same
wherever that cannot change what the program means, and so run its top-level loops on fast
local variables as they do (module-level names cost a dictionary look-up each: a loop over
200k input lines ran ~20 % slower than the official harness ran it). A program runs as a real
`__main__` module instead where the function would change what it means: it names its
module scope (`global`, `globals()`, `locals()`, `vars()`, `eval`, `exec`, `__main__`, a
`__future__` or star import), or it binds anywhere a name that a module-level read could
find elsewhere (a builtin, a prelude name, a hoisted import: `list = list(...)` reads the
builtin in a module and an unbound local in a function). One that only compiles inside a
function (a top-level `nonlocal`, `return`) runs wrapped, as the officials run it.
"""

from __future__ import annotations

WRAPPED = "_cppo_wrapped_main"
# names whose use at all keeps a program a real module: each sees the module scope
_MODULE_NAMES = frozenset({"globals", "locals", "vars", "eval", "exec", "__main__",
                           "__import__", "__dict__", "__builtins__"})  # fmt: skip
_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def compile_program(source: str, mode: str, known: frozenset = frozenset()):
    """(code object, wrapped) or (None, error): see the module doc. `known`: the names a
    module-level read finds without the program (builtins, the prelude's)."""
    import ast  # (imported by the server after the zygote is forked: no child carries it)

    try:
        module = compile(source, "<solution>", "exec", dont_inherit=True)
        error = None
    except _ERRORS as exc:
        module, error = None, f"{type(exc).__name__}: {exc}"[:500]
    if mode != "stdin":
        return (module, False) if module is not None else (None, error)
    try:
        tree = ast.parse(source)
    except _ERRORS:
        return (module, False) if module is not None else (None, error)
    if module is not None and not _function_safe(ast, tree, known):
        return module, False
    try:
        imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        rest = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        fn = ast.parse(f"def {WRAPPED}():\n    pass\n").body[0]
        assert isinstance(fn, ast.FunctionDef)  # (the line above parses to one def)
        fn.body = rest or [ast.Pass()]
        wrapped = ast.Module(body=imports + [fn], type_ignores=[])
        return compile(ast.fix_missing_locations(wrapped), "<solution>", "exec"), True
    except _ERRORS:
        return (module, False) if module is not None else (None, error)


def _function_safe(ast, tree, known: frozenset) -> bool:
    """Does running the module's statements inside a function mean the same program?"""
    hoisted = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            hoisted |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    bound: set[str] = set()  # every name bound anywhere (nested scopes too: conservative)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return False
        if isinstance(node, ast.ImportFrom) and (
            node.module == "__future__" or any(a.name == "*" for a in node.names)
        ):
            return False
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name in _MODULE_NAMES for a in node.names):
                return False
            if node not in tree.body:
                bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name):
            if node.id in _MODULE_NAMES:
                return False
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Attribute) and node.attr in ("modules", "__dict__", "f_globals"):
            return False
        elif isinstance(node, ast.Constant) and node.value == "__main__":
            if not _is_main_guard(ast, tree, node):
                return False
    return not bound & (known | hoisted)


def _is_main_guard(ast, tree, const) -> bool:
    """Is this "__main__" the usual `if __name__ == "__main__":` test at the top level?"""
    for stmt in tree.body:
        test = getattr(stmt, "test", None)
        if isinstance(stmt, ast.If) and isinstance(test, ast.Compare):
            if const in test.comparators or const is test.left:
                return True
    return False


def imports_numpy(source: str, prelude: str = "none") -> bool:
    """Does the program import numpy (then it runs from the zygote that has, harness.py)?
    What it actually imports: import statements, `__import__` and `importlib.import_module`
    called with a literal name, and under APPS' prelude a read of the `np` it binds; never a
    name in a comment or a string (a substring match sent plain programs to the numpy
    zygote). A program that does not parse: no."""
    import ast

    try:
        tree = ast.parse(source)
    except _ERRORS:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and node.args:
            func, arg = node.func, node.args[0]
            called = getattr(func, "id", None) or getattr(func, "attr", None)
            text = arg.value if isinstance(arg, ast.Constant) else None
            names = [text] if isinstance(text, str) and called in _IMPORTERS else []
        elif isinstance(node, ast.Name) and prelude == "apps":
            names = ["numpy"] if node.id == "np" and isinstance(node.ctx, ast.Load) else []
        else:
            continue
        if any(name.split(".")[0] == "numpy" for name in names):
            return True
    return False


_IMPORTERS = ("__import__", "import_module")
