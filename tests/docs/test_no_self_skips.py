"""The project's own modules are imported plainly by the tests: `importorskip` of one
would turn an import bug into a silent skip."""

from __future__ import annotations

import ast
from pathlib import Path

OWN = ("cppo_bench", "trainers")


def test_no_test_skips_on_an_import_of_the_project():
    offenders = []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).split(".")[0] in OWN
            ):
                offenders.append(f"{path.name}:{node.lineno} {node.args[0].value}")
    assert offenders == []
