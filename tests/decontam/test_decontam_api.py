"""`cppo-bench decontam` as one DecontamConfig and one call (issue 48 item 2): a config or its
fields as keywords, the same files as the command, and a bad setting is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.api import build_config
from cppo_bench.api.decontam import DecontamConfig, decontam
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main
from cppo_bench.errors import DataError


def _copy(path: Path, n: int) -> Path:
    """The first `n` demo problems as a JSONL file of Problem dicts."""
    problems = load_benchmark("demo").problems[:n]
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in problems))
    return path


def test_a_config_and_keywords_remove_the_same_problems(tmp_path: Path) -> None:
    copy = _copy(tmp_path / "copy.jsonl", 3)
    notes: list[str] = []
    config = build_config(DecontamConfig, {"train": ["demo"], "eval": [str(copy)],
                                           "out": tmp_path / "a"})  # fmt: skip
    done = decontam(config, on_note=notes.append)
    demo_ids = [p.problem_id for p in load_benchmark("demo").problems]
    # the oracle: the eval file holds exactly the first three demo problems, verbatim
    assert sorted(r["uid"] for r in done.report["removed"]) == sorted(
        f"demo/{i}" for i in demo_ids[:3]
    )
    assert done.train_path.read_text().count("\n") == len(demo_ids) - 3
    assert notes[0].startswith("train demo") and notes[1].startswith(f"eval {copy}")
    again = decontam(train="demo", eval=str(copy), out=str(tmp_path / "b"))
    assert again.report["removed"] == done.report["removed"]
    cli = CliRunner().invoke(main, ["decontam", "--train", "demo", "--eval", str(copy),
                                    "--out", str(tmp_path / "c")])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert (tmp_path / "c" / "filtered_train.jsonl").read_text() == done.train_path.read_text()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"max_df": 1}, "setting max_df: must be 0 (none) or >= 2, got 1"),
        ({"threshold": 0.0}, "setting threshold: must be in (0, 1], got 0.0"),
        ({"metric": "cosine"}, "setting metric: 'cosine' is not one of containment, jaccard"),
        ({"eval": []}, "setting eval: give at least one source"),
        ({"ngrams": 3}, "unknown setting key ngrams"),
        ({"loader_options": {"": 3}}, "setting loader_options: '': expected a mapping"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, settings: dict, named: str) -> None:
    values = {"train": ["demo"], "eval": ["demo"], "out": str(tmp_path / "o"), **settings}
    with pytest.raises(DataError) as caught:
        decontam(**values)
    assert named in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "o").exists()  # refused before anything loads or is written
    cli = CliRunner().invoke(main, ["decontam", "--train", "demo", "--eval", "demo", "--out",
                                    str(tmp_path / "o"), "--max-df", "1"])  # fmt: skip
    assert cli.exit_code == 1 and "Error: --max-df: must be 0 (none) or >= 2, got 1" in cli.output
