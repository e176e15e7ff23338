"""Empty or unusable input is an error: one line naming the file, a non-zero exit, no
traceback (an empty table that exits 0 reads like success)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cppo_bench.cli import main


def _fails_in_one_line(args: list[str], *needles: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in errors[0], result.output


def test_data_show_on_an_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    _fails_in_one_line(["data", "show", "--bench", "demo", "--data", str(path)], str(path))


def test_data_show_on_an_all_bad_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('not json\n{"problem_id": "x"}\n')
    _fails_in_one_line(
        ["data", "show", "--bench", "demo", "--data", str(path), "--json"],
        str(path), "2 record(s) skipped", "line 1",
    )  # fmt: skip


@pytest.mark.parametrize("bench", ["apps", "lcb", "codecontests"])
def test_data_show_on_a_folder_without_data(tmp_path, bench):
    (tmp_path / "notes.txt").write_text("no problems here\n")
    (tmp_path / "test.jsonl").write_text("")
    _fails_in_one_line(["data", "show", "--bench", bench, "--data", str(tmp_path)])


def test_data_show_limit_zero_is_refused_like_run():
    result = CliRunner().invoke(main, ["data", "show", "--bench", "demo", "--limit", "0"])
    assert result.exit_code == 2 and "--limit" in result.output


def test_verify_with_an_empty_programs_file(tmp_path):
    path = tmp_path / "programs.jsonl"
    path.write_text("")
    _fails_in_one_line(["verify", "--bench", "demo", "--programs", str(path)], str(path))


def test_report_on_a_folder_without_runs(tmp_path):
    (tmp_path / "runs").mkdir()
    out = tmp_path / "out"
    _fails_in_one_line(
        ["report", "--runs", str(tmp_path / "runs"), "--out", str(out)], "no runs found"
    )
    assert not out.exists()  # nothing written that looks like a finished report
