"""`cppo-bench data list` / `data show`: JSON lines that round-trip to the loaders' Problems,
a summary table with counts and skipped records, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cppo_bench.api.data import summary_rows
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.cli.options import parse_kv as parse_options
from cppo_bench.problem import Problem


def _run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def test_list_names_every_benchmark() -> None:
    result = _run("data", "list", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in ("apps", "codecontests", "lcb", "lcb_execution", "lcb_output_prediction", "demo"):
        assert name in result.stdout
    # split names in brackets are shown, not eaten as rich markup
    assert "codeparrot/apps [test]" in result.stdout
    assert "deepmind/code_contests [valid]" in result.stdout


def test_show_json_round_trips(shared_data: Path) -> None:
    folder = str(shared_data / "apps" / "folder_layout")
    result = _run(
        "data", "show", "--bench", "apps", "--data", folder, "-o", "difficulty=all", "--json"
    )
    assert result.exit_code == 0, result.output
    shown = [Problem.from_dict(json.loads(line)) for line in result.stdout.splitlines()]
    assert shown == load_benchmark("apps", folder, difficulty="all").problems
    assert len(shown) == 5 and result.stderr == ""


def test_show_limit(shared_data: Path) -> None:
    path = str(shared_data / "livecodebench" / "code_generation_release_v1_public.jsonl")
    result = _run("data", "show", "--bench", "lcb", "--data", path, "--json", "--limit", "3")
    assert result.exit_code == 0, result.output
    ids = [json.loads(line)["problem_id"] for line in result.stdout.splitlines()]
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()[:3]]
    assert ids == [r["question_id"] for r in rows]


def test_show_summary_table(shared_data: Path) -> None:
    path = str(shared_data / "livecodebench" / "code_generation_release_v1_public.jsonl")
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    n_call = sum(json.loads(r["public_test_cases"])[0]["testtype"] == "functional" for r in rows)
    result = _run("data", "show", "--bench", "lcb", "--data", path)
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert f"problems │ {len(rows)}" in out
    assert f"call {n_call}" in out and f"stdin {len(rows) - n_call}" in out
    assert "skipped records │ 0" in out


def test_summary_rows_count_tests() -> None:
    problems = load_benchmark("demo").problems
    rows = dict(summary_rows(problems))
    n_tests = sorted(len(p.tests) for p in problems)
    assert rows["problems"] == str(len(problems))
    assert rows["tests per problem (min / median / max)"].startswith(f"{n_tests[0]} / ")
    assert rows["tests per problem (min / median / max)"].endswith(f" / {n_tests[-1]}")
    assert rows["tests"].startswith(f"{sum(n_tests)} (")


def test_show_reports_skipped_records(shared_data: Path, tmp_path: Path) -> None:
    lines = (shared_data / "apps" / "introductory.jsonl").read_text().splitlines()[:3]
    bad = json.loads(lines[1])
    bad["input_output"] = ""
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(bad), lines[2], "{torn"]) + "\n")
    result = _run("data", "show", "--bench", "apps", "--data", str(path))
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "skipped records │ 2" in out and "empty input_output" in out and "invalid JSON" in out
    as_json = _run("data", "show", "--bench", "apps", "--data", str(path), "--json")
    assert len(as_json.stdout.splitlines()) == 2
    assert f"record {bad['problem_id']} (line 2): empty input_output" in as_json.stderr
    strict = _run("data", "show", "--bench", "apps", "--data", str(path), "--strict")
    assert strict.exit_code == 1
    assert strict.stderr.strip().splitlines() == [
        f"Error: {path}: record {bad['problem_id']} (line 2): empty input_output (no tests)"
    ]


def test_offline_without_data_is_one_line() -> None:
    result = _run("data", "show", "--bench", "codecontests", env={"HF_HUB_OFFLINE": "1"})
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: cannot reach the Hugging Face hub for deepmind/code_contests")
    assert "pass --data PATH" in line and "Traceback" not in result.output


def test_bad_input_is_clean() -> None:
    unknown = _run("data", "show", "--bench", "nope")
    assert unknown.exit_code == 1 and "unknown benchmark 'nope'" in unknown.stderr
    bad_option = _run("data", "show", "--bench", "demo", "-o", "novalue")
    assert bad_option.exit_code == 2 and "KEY=VALUE" in bad_option.stderr
    unknown_option = _run("data", "show", "--bench", "demo", "-o", "subset=3")
    assert unknown_option.exit_code == 1 and "unknown option(s): subset" in unknown_option.stderr


def test_unreadable_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"question": "caf\xe9"}\n')
    result = _run("data", "show", "--bench", "codecontests", "--data", str(path))
    assert result.exit_code == 1
    # the bad line is named by its number (issue 27: one bad line no longer refuses the file)
    assert result.stderr.strip().splitlines() == [
        f"Error: {path}: no usable codecontests problems (1 record(s) skipped; first: record "
        "line 1: not UTF-8 (invalid continuation byte at byte 17))"
    ]


def test_parse_options() -> None:
    assert parse_options(("subset=0", "difficulty=all", "release_version=v1_v3", "x=true")) == {
        "subset": 0, "difficulty": "all", "release_version": "v1_v3", "x": True
    }  # fmt: skip
    assert parse_options(("start_date=2025-02-01", "ids=1,2", "n=null")) == {
        "start_date": "2025-02-01", "ids": "1,2", "n": None
    }  # fmt: skip
    with pytest.raises(Exception, match="twice"):
        parse_options(("a=1", "a=2"))


def test_show_api_from_a_config_and_from_keywords(shared_data: Path) -> None:
    from cppo_bench.api import build_config
    from cppo_bench.api.data import DataConfig, benchmarks, show
    from cppo_bench.benchmarks import BENCHMARKS
    from cppo_bench.errors import DataError

    folder = shared_data / "apps" / "folder_layout"
    config = build_config(DataConfig, {"bench": "apps", "data": folder,
                                       "loader_options": {"difficulty": "all"}})  # fmt: skip
    by_config = show(config)
    # the oracle: the loader itself, read directly
    assert by_config.problems == load_benchmark("apps", str(folder), difficulty="all").problems
    assert show("apps", data=str(folder), loader_options={"difficulty": "all"}, limit=2).problems \
        == by_config.problems[:2]  # fmt: skip
    assert [b.name for b in benchmarks()] == BENCHMARKS.names()
    for settings, needle in (({"limit": 0}, "limit 0"), ({"strict": "yes"}, "strict"),
                             ({"bnech": "x"}, "bnech")):  # fmt: skip
        with pytest.raises(DataError) as err:
            show("apps", **settings)
        assert needle in str(err.value) and "\n" not in str(err.value)
