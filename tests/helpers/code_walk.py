"""What the three door walks (the printer in tests/util/, the reader and writer in
tests/files/) share: the dotted name of a call's target, read from the abstract syntax tree."""

from __future__ import annotations

import ast


def dotted(node: ast.AST) -> str:
    """`os.path.join` for that attribute chain, "?" where a part is not a plain name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"
