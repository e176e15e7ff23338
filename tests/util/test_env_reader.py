"""The environment is read through one typed reader (cppo_bench/util/env.py, issue 44 item
7): a walk of the code fails on a read around it, and the reader turns each bad value into
one line or a clamp."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import pytest
from code_walk import dotted

from cppo_bench.util import env
from cppo_bench.util.progress import INTERVAL_ENV, MIN_INTERVAL_S, interval_s

ROOT = Path(__file__).resolve().parents[2]
READER = ROOT / "cppo_bench" / "util" / "env.py"
# writes are not reads: setting a library's switch for this process, or a child's variable
WRITES = {"os.environ.setdefault"}


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    """Every read of the environment: os.getenv, os.environ.get / [...] / in / copy and any
    other use of os.environ that is not an assignment target or a setdefault."""
    found = []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute | ast.Name):
            continue
        name = dotted(node)
        if name in ("os.getenv", "os.environb", "getenv"):
            found.append((node.lineno, name))
        if name != "os.environ" and name != "environ":
            continue
        up = parents.get(node)
        if isinstance(up, ast.Attribute) and f"{name}.{up.attr}" in WRITES:
            continue
        if isinstance(up, ast.Subscript) and isinstance(up.ctx, ast.Store | ast.Del):
            continue
        found.append((node.lineno, name))
    return found


INSIDE = ROOT / "cppo_bench" / "verifier" / "inside"


def test_no_code_reads_the_environment_around_the_reader():
    offenders = []
    for folder in ("cppo_bench", "trainers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == READER or INSIDE in path.parents:
                continue  # the sandbox side runs without the package (and resets a program's)
            tree = ast.parse(path.read_text(), str(path))
            offenders += [f"{path.relative_to(ROOT)}:{line}: {n}" for line, n in _reads(tree)]
    assert not offenders, "read the environment through cppo_bench.util.env:\n" + "\n".join(
        offenders
    )


def test_the_walk_finds_each_kind_of_read():
    """The walk is not blind: each way of reading is caught, writes are not."""
    src = (
        "import os\nfrom os import environ, getenv\n"
        "a = os.environ.get('A')\nb = os.environ['B']\nc = 'C' in os.environ\n"
        "d = os.getenv('D')\ne = dict(os.environ)\nf = getenv('F')\ng = environ.get('G')\n"
        "os.environ['H'] = '1'\nos.environ.setdefault('I', '1')\ndel os.environ['J']\n"
    )
    lines = sorted({line for line, _ in _reads(ast.parse(src))})
    assert lines == [3, 4, 5, 6, 7, 8, 9]


@pytest.mark.parametrize("value, expected", [("1e-300", MIN_INTERVAL_S), ("0", MIN_INTERVAL_S),
                                             ("-5", MIN_INTERVAL_S), ("2.5", 2.5), ("", 30.0),
                                             ("  7 ", 7.0)])  # fmt: skip
def test_the_progress_interval_is_clamped_to_its_floor(monkeypatch, value, expected):
    monkeypatch.setenv(INTERVAL_ENV, value)
    assert interval_s() == expected


@pytest.mark.parametrize("value", ["nan", "inf", "abc", "1e999", "\x1b[31m"])
def test_a_bad_progress_interval_is_one_line_naming_it(monkeypatch, value):
    monkeypatch.setenv(INTERVAL_ENV, value)
    with pytest.raises(env.EnvError) as err:
        interval_s()
    assert INTERVAL_ENV in str(err.value) and "\n" not in str(err.value)
    assert "\x1b" not in str(err.value)  # quoted with escapes


@pytest.mark.parametrize(
    "value",
    ["not a url", "ftp://host", "http://", "https://h:99999", "https://h:abc", "https://[::1"],
)
def test_a_nonsense_hf_endpoint_is_one_line(monkeypatch, value):
    monkeypatch.setenv("HF_ENDPOINT", value)
    with pytest.raises(env.EnvError, match="HF_ENDPOINT"):
        env.url("HF_ENDPOINT", "https://huggingface.co")


def test_a_nonsense_hf_endpoint_through_the_cli_is_one_line(tmp_path):
    """As a user meets it: a benchmark load that asks the hub ends in one line."""
    proc = subprocess.run(
        [sys.executable, "-m", "cppo_bench", "data", "show", "--bench", "apps", "--limit", "1"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_ENDPOINT": "https://h:99999",
             "HF_HUB_OFFLINE": "0"},
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode != 0 and "HF_ENDPOINT" in proc.stderr


def test_typed_values_and_ranges(monkeypatch):
    monkeypatch.setenv("X_FLAG", "Yes")
    assert env.flag("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(env.EnvError, match="X_FLAG"):
        env.flag("X_FLAG", False)
    monkeypatch.setenv("WORLD_SIZE", "0")
    with pytest.raises(env.EnvError, match="WORLD_SIZE"):
        env.world_size()
    monkeypatch.setenv("WORLD_SIZE", "10" * 400)
    with pytest.raises(env.EnvError) as err:
        env.world_size()
    assert len(str(err.value)) < 300
    monkeypatch.delenv("WORLD_SIZE")
    assert env.world_size() == 1
    monkeypatch.setenv("X_NUM", "5")
    assert env.number("X_NUM", 1.0, floor=0.0, ceiling=2.0) == 2.0
    assert math.isfinite(env.number("X_UNSET_NUM", 3.0, floor=1.0))
    monkeypatch.setenv("X_PATH", "~/cache")
    assert env.path("X_PATH") == Path.home() / "cache"


@pytest.mark.parametrize("name", ["CPPO_SANDBOX_SECCOMP", "CPPO_SANDBOX_REUSE"])
def test_a_bad_sandbox_switch_is_its_own_line(monkeypatch, name):
    """Not the failure of every sandbox mode's probe (which is what it read as at first)."""
    from cppo_bench.verifier import launch, sandbox

    assert name in (launch.SECCOMP_ENV, launch.REUSE_ENV)
    monkeypatch.setattr(sandbox, "_MODE", None)
    monkeypatch.setenv(name, "2")
    with pytest.raises(env.EnvError) as err:
        sandbox.sandbox_mode()
    assert str(err.value).startswith(f"environment variable {name}=")
