"""`stats passk --by` on an outcome CSV (issue 44 item 7): grouped on the file's own column,
or one line naming the file, the missing column and the columns the file has."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cppo_bench.cli import main


def _csv(tmp_path, header: str, rows: list[str]):
    path = tmp_path / "out.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_a_csv_without_the_column_is_one_line_naming_file_and_columns(tmp_path):
    path = _csv(tmp_path, "method,problem_id,outcomes", ["a,p1,0110", "a,p2,0000"])
    for by, column in (("difficulty", "difficulty"), ("platform", "platform"),
                       ("month", "contest_date"), ("window", "contest_date")):  # fmt: skip
        result = CliRunner().invoke(main, ["stats", "passk", "--csv", str(path), "--by", by])
        assert result.exit_code == 1 and "Traceback" not in result.output
        (line,) = [x for x in result.output.splitlines() if x.strip()]
        assert str(path) in line and repr(column) in line
        assert "method, problem_id, outcomes" in line


def test_a_csv_with_the_column_is_grouped_on_it(tmp_path):
    path = _csv(tmp_path, "method,problem_id,outcomes,difficulty",
                ["a,p1,1111,easy", "a,p2,0000,hard", "a,p3,0000,"])  # fmt: skip
    result = CliRunner().invoke(
        main, ["stats", "passk", "--csv", str(path), "--by", "difficulty", "--k", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["difficulty"]: r for r in json.loads(result.stdout)}
    assert rows["easy"]["mean"] == 1.0 and rows["hard"]["mean"] == 0.0
    assert "(unknown)" in rows  # an empty cell is a problem of unknown difficulty
