"""`cppo-bench report` as one ReportConfig and one call (issue 48 item 2): a config or its
fields as keywords, the same report as the command, and a bad setting is one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.api import build_config
from cppo_bench.api.report import ReportConfig, report
from cppo_bench.cli import main
from cppo_bench.errors import DataError


def _store(root: Path) -> Path:
    runs = root / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True, False, False, False]] * N,
                       planner=[0] * N, solver=[0] * N))  # fmt: skip
    return runs


def test_a_config_and_keywords_make_the_same_report(tmp_path: Path) -> None:
    runs = _store(tmp_path)
    config = build_config(ReportConfig, {"runs": runs, "check": True, "resamples": 50})
    checked = report(config)
    assert checked.runs == 1 and checked.written is None and checked.missing > 0
    assert "cppo-bench run" in (checked.check_text or "")
    done = report(runs=str(runs), out=str(tmp_path / "out"), formats="md", resamples=50)
    assert (tmp_path / "out" / "index.html").is_file()
    assert sorted(p.suffix for p in (tmp_path / "out" / "tables").iterdir()) == [".md"] * len(
        list((tmp_path / "out" / "tables").iterdir())
    )
    assert (done.tables, done.cells, done.numbers) == (checked.tables, checked.cells,
                                                      checked.numbers)  # fmt: skip
    cli = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out", str(tmp_path / "c"),
                                    "--formats", "md", "--resamples", "50"])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert f"{done.tables} tables ({done.numbers} of {done.cells} cells show a number" in cli.output


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"formats": "md,pdf"}, "setting formats: [1] 'pdf' is not one of md, tex, csv"),
        ({"spread": "sd"}, "setting spread: 'sd' is not one of study, seed-std, bootstrap-se"),
        ({"resamples": 0}, "setting resamples: must be >= 1, got 0"),
        ({"format": "md"}, "unknown setting key format"),
        ({"runs": "nowhere"}, "nowhere: no run store here"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, settings: dict, named: str) -> None:
    values = {"runs": str(_store(tmp_path)), "check": True, **settings}
    with pytest.raises(DataError) as caught:
        report(**values)
    assert named in str(caught.value) and "\n" not in str(caught.value)
