"""Issue 36 item 2: every path that uses the verifier as a reward or to pick training data
runs every test (an early stop tells later programs whether test j ran, through any
machine-wide state, cppo_bench/verifier/SECURITY.md). Fails when a new call goes around it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the training side and the data audit that feeds it
REWARD_PATHS = [ROOT / "trainers", ROOT / "cppo_bench" / "augment" / "audit.py"]


def _calls(path: Path):
    for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in ("verify_batch", "verify"):
                    yield file, node


def test_every_reward_call_of_the_verifier_runs_every_test() -> None:
    found = 0
    for path in REWARD_PATHS:
        for file, call in _calls(path):
            found += 1
            flags = {k.arg: k.value for k in call.keywords}
            value = flags.get("all_tests")
            assert isinstance(value, ast.Constant) and value.value is True, (
                f"{file.relative_to(ROOT)}:{call.lineno}: a verifier call without all_tests=True"
            )
    assert found >= 2  # rewards._verify and the audit
