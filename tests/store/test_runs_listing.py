"""`cppo-bench runs` without a terminal (piped, logged) keeps every cell on one line."""

from __future__ import annotations

from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.backends.default_model import DEFAULT_MODEL
from cppo_bench.cli import main


def test_runs_listing_does_not_fold_cells_without_a_terminal(tmp_path):
    _write(tmp_path, Plant("plan_and_solve", DEFAULT_MODEL, "demo", 0, [[True] * 4] * N,
                           planner=[0] * N, solver=[0] * N))  # fmt: skip
    result = CliRunner().invoke(main, ["runs", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.output.splitlines() if "plan_and_solve" in line]
    assert DEFAULT_MODEL in row and "complete" in row
