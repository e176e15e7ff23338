"""Every command `cppo-bench report --check` prints (and fill_missing.sh holds) must run:
it parses as `cppo-bench run` arguments and names no model that cannot be loaded."""

from __future__ import annotations

import shlex

from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.backends.default_model import DEFAULT_MODEL
from cppo_bench.cli import main
from cppo_bench.cli.run import run


def test_commands_for_the_embedded_model_run_without_its_label(tmp_path):
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", DEFAULT_MODEL, "demo", 0, [[False] * 4] * N,
                       planner=[0] * N, solver=[0] * N))  # fmt: skip
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--check"])
    assert result.exit_code == 1, result.output  # cells lack runs
    commands = [line for line in result.output.splitlines() if line.startswith("cppo-bench run")]
    assert commands
    # a trained row's command needs its checkpoint first: shown, but commented out
    placeholders = [line for line in result.output.splitlines() if "checkpoint, training" in line]
    assert placeholders and all(line.lstrip().startswith("# ") for line in placeholders)
    for command in commands:
        argv = shlex.split(command)[2:]
        ctx = run.make_context("run", argv)  # parses: every flag exists, every value fits
        # the label is what the run records, not a loadable model: runs of the embedded
        # model are made without --model
        assert ctx.params["model"] != DEFAULT_MODEL, command
