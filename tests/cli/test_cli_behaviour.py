"""Top-level CLI behaviour: Ctrl-C exits 130, a listed command with a missing module fails
loudly, an unknown method is one error line with no progress output before it."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from cppo_bench import benchmarks
from cppo_bench.cli import COMMANDS, main


def test_ctrl_c_exits_130(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(benchmarks, "load_benchmark", interrupted)
    result = CliRunner().invoke(main, ["data", "show", "--bench", "demo"])
    assert result.exit_code == 130, result.output


def test_a_listed_command_whose_module_is_missing_fails_loudly(monkeypatch):
    monkeypatch.setitem(COMMANDS, "ghost", "cppo_bench.cli.no_such_module:ghost")
    result = CliRunner().invoke(main, ["ghost"])
    assert result.exit_code == 1
    assert "cppo_bench.cli.no_such_module is missing" in result.output


def test_unknown_method_prints_only_the_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "cppo_bench", "run", "--method", "nope", "--bench", "demo",
         "--limit", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.splitlines()[0]]
    assert done.stderr.startswith("Error: unknown method 'nope'")
    assert not list(tmp_path.iterdir())  # nothing stored either
