"""What the door walks (the printer and the regex scan in tests/util/, the reader, the JSON
parser and named files in tests/files/) share: the source files they walk, and the dotted name
of a call's target, read from the abstract syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sources() -> list[Path]:
    """Every Python file of the harness and the trainers, in order."""
    return sorted([*(ROOT / "cppo_bench").rglob("*.py"), *(ROOT / "trainers").rglob("*.py")])


def dotted(node: ast.AST) -> str:
    """`os.path.join` for that attribute chain, "?" where a part is not a plain name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"
