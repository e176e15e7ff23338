"""Every command that writes an output folder or file, on a real full or read-only tmpfs
(tests/helpers/small_fs.py): exit 1 with one `Error:` line naming the path and the OS
reason, no traceback; what it wrote before is intact, and once there is room again the
same command goes through (issue 37 item 6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_plant import N, Plant, _write
from small_fs import REASON, kept, one_error_line, small_fs, snapshot

from cppo_bench.cli import main


def _demo_rows(path: Path, n: int = 2) -> Path:
    from cppo_bench.benchmarks import load_benchmark

    rows = [p.to_dict() for p in load_benchmark("demo").problems[:n]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _two_references(work: Path) -> Path:
    """Problems with two agreeing references (augment skips a problem with one)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "augment"))
    from test_augment import max_problem, total_problem

    path = work / "weak.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in (max_problem(),
                                                                     total_problem())))  # fmt: skip
    return path


def _programs(work: Path) -> Path:
    path = work / "programs.jsonl"
    path.write_text(json.dumps({"problem_id": "add-two", "code": "print(0)\n"}) + "\n")
    return path


def _runs(work: Path) -> Path:
    runs = work / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    return runs


def _verify(work: Path, *more: str | Path) -> list[str]:
    return ["verify", "--bench", "demo", "--programs", str(_programs(work)), *map(str, more)]


# command -> (its arguments, given a scratch folder and the small file system; the path
# under the file system its error line names)
COMMANDS: dict[str, Callable[[Path, Path], tuple[list[str], Path]]] = {
    "verify --out": lambda work, fs: (_verify(work, "--out", fs / "res.jsonl"), fs / "res.jsonl"),
    "verify --cache-dir": lambda work, fs: (
        _verify(work, "--cache-dir", fs / "cache", "--out", work / "res.jsonl"),
        fs / "cache",
    ),
    "report --out": lambda work, fs: (
        ["report", "--runs", str(_runs(work)), "--out", str(fs / "rep")],
        fs / "rep",
    ),
    "decontam --out": lambda work, fs: (
        [
            "decontam",
            "--train",
            "demo",
            "--eval",
            f"demo={_demo_rows(work / 'ev.jsonl')}",
            "--out",
            str(fs / "d"),
        ],
        fs / "d",
    ),  # fmt: skip
    "augment --out": lambda work, fs: (
        [
            "augment",
            "--bench",
            "demo",
            "--data",
            str(_two_references(work)),
            "--per-problem",
            "2",
            "--workers",
            "1",
            "--quiet",
            "--out",
            str(fs / "aug"),
        ],
        fs / "aug",
    ),  # fmt: skip
}


@pytest.mark.parametrize("state", ("full", "read-only"))
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_on_a_full_or_read_only_disk_is_one_line(tmp_path, name, state) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with small_fs(tmp_path / "fs", size="4m") as fs:  # a report is larger than 256 KiB
        args, names = COMMANDS[name](work, fs.root)
        first = CliRunner().invoke(main, args)
        assert first.exit_code == 0, first.output
        if "cache" in name:  # the verdicts are stored: judge a new program to store one
            Path(args[args.index("--programs") + 1]).write_text(
                json.dumps({"problem_id": "add-two", "code": "print(1)\n"}) + "\n"
            )
        if "augment" in name:  # killed before its first test was stored: the resume redoes
            (names / "tests.jsonl").unlink()  # it (a shorter file keeps its page: room)
        before = snapshot(fs.root)
        fs.apply(state)
        one_error_line(CliRunner().invoke(main, args), REASON[state], str(names))
        assert kept(before, snapshot(fs.root))  # what was written before is intact, no temp
        fs.restore(state)
        again = CliRunner().invoke(main, args)
        assert again.exit_code == 0, again.output
