"""Issue 37, items 1 to 4 (items 5 to 7: tests/cli/test_untrusted_strangers.py): each class of
stranger's input through every command and API call that takes it. Every case must end in
one line naming the file or value and what is wrong: no traceback, no hang (a FIFO case
runs in a subprocess whose timeout is only a hang guard, never a timing), nothing executed,
lost or written outside the output folder. Memory is bounded where a size is the attack:
ru_maxrss growth of a fresh process, stated per test."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cli_subprocess import cli as _cli
from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.cli import main
from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import unsafe_char

ROOT = Path(__file__).resolve().parents[2]
# one of each class: C0, C1, DEL, bidi isolate / override / mark, Arabic letter mark,
# zero-width, BOM, line separator, a tag character (astral Cf)
EVIL = ["\x1b]0;t\x07", "\x9b", "\x7f", "\u2066", "\u202e", "\u200f", "\u061c", "\u200b",
        "\ufeff", "\u2028", "\U000e0041"]  # fmt: skip


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def _no_raw(text: str) -> None:
    raw = sorted({f"U+{ord(c):04X}" for c in text.replace("\n", "") if unsafe_char(c)})
    assert not raw, f"printed raw: {raw}"


# --- 1. the printer: names from a run store, through runs / stats / report -----------------------


def test_names_with_every_unsafe_class_print_escaped(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for i, ch in enumerate(EVIL):
        _write(runs, Plant("direct", f"m{i}{ch}x", "demo", 0, [[True] * 4] * N,
                           planner=[0] * N, solver=[0] * N))  # fmt: skip
    # a bad record line whose error message quotes data
    rec = next(runs.rglob("records.jsonl"))
    with open(rec, "a") as fh:
        fh.write(json.dumps({"problem_id": "p\u061c\x1b[2J", "branches": "x"}) + "\n")
    runner = CliRunner()
    for args in (["runs", "--out", str(runs)], ["stats", "passk", "--runs", str(runs)],
                 ["report", "--runs", str(runs), "--out", str(tmp_path / "r"), "--check"]):  # fmt: skip
        result = runner.invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        _no_raw(result.output)


def test_data_show_escapes_ids(tmp_path: Path) -> None:
    data = tmp_path / "p.jsonl"
    rows = [{"benchmark": "demo", "problem_id": f"p{ch}", "statement": "s",
             "tests": [{"input": "1\n", "output": "1\n"}]} for ch in EVIL]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{bad\n")
    for extra in ([], ["--json"]):
        result = CliRunner().invoke(main, ["data", "show", "--bench", "demo", "--data",
                                           str(data), *extra])  # fmt: skip
        assert result.exit_code == 0, result.output
        _no_raw(result.output)


# --- 2. the reader: FIFOs, devices, /dev/zero, sizes through each command --------------------


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    os.mkfifo(path)
    return path


def test_fifo_and_dev_zero_as_benchmark_data(fifo: Path, tmp_path: Path) -> None:
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    for path, kind in ((fifo, "is a FIFO"), (zero, "is a character device")):
        _one_line_error(_cli("data", "show", "--bench", "demo", "--data", str(path)),
                        str(path), kind)  # fmt: skip


def test_fifo_as_verify_programs_and_test_set(fifo: Path, tmp_path: Path) -> None:
    _one_line_error(_cli("verify", "--bench", "demo", "--programs", str(fifo)), "is a FIFO")
    tests = tmp_path / "set"
    tests.mkdir()
    os.mkfifo(tests / "augment.json")
    _one_line_error(_cli("verify", "--bench", "demo", "--reference", "--tests", str(tests)),
                    "augment.json", "is a FIFO")  # fmt: skip


def test_fifo_as_stats_csv(fifo: Path) -> None:
    csv = fifo.with_name("outcomes.csv")
    os.rename(fifo, csv)
    _one_line_error(_cli("stats", "passk", "--csv", str(csv)), str(csv), "is a FIFO")


def test_fifo_in_test_audits_is_skipped_by_name(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    run_dir = next(runs.rglob("manifest.json")).parent
    (run_dir / "test_audits").mkdir()
    os.mkfifo(run_dir / "test_audits" / "x.json")
    result = _cli("report", "--runs", str(runs), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "x.json: not an audit" in result.stderr


def test_report_spec_with_yaml_aliases_is_refused(tmp_path: Path) -> None:
    runs, specs = tmp_path / "runs", tmp_path / "specs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    specs.mkdir()
    rows = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    rows += [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}" + f",*{chr(97 + i)}" * 8 + "]"
             for i in range(8)]  # fmt: skip
    (specs / "bomb.yaml").write_text("\n".join(rows) + "\n")
    assert (specs / "bomb.yaml").stat().st_size < 1024
    _one_line_error(_cli("report", "--runs", str(runs), "--out", str(tmp_path / "o"),
                         "--specs", str(specs)), "bomb.yaml", "aliases")  # fmt: skip


def test_apps_folder_with_a_huge_input_output_is_named(tmp_path: Path) -> None:
    from cppo_bench.benchmarks import load_benchmark

    folder = tmp_path / "apps" / "test" / "0001"
    folder.mkdir(parents=True)
    (folder / "question.txt").write_text("Echo.")
    with open(folder / "input_output.json", "wb") as fh:
        fh.truncate((1 << 30) + (200 << 20))  # 1.2 GiB, sparse: no disk, never read
    result = load_benchmark("apps", data=str(tmp_path / "apps"))
    assert not result.problems
    assert "input_output.json: 1283457024 bytes, larger than" in str(result.errors[0])


def test_lcb_blob_that_inflates_to_millions_of_tests_stops_early() -> None:
    """A 250 KB blob whose JSON holds 1.5 million tests: decoding stops at the value count.
    Bound: the process grows by less than 200 MiB (the inflated text itself is 64 MiB, held
    twice: as bytes and as the unpickled string); the old decoder built every test first."""
    code = (
        "import base64, pickle, resource, zlib\n"
        "from cppo_bench.benchmarks.livecodebench import decode_private_tests\n"
        't = \'[\' + \',\'.join([\'{"input":"","output":"","testtype":"stdin"}\'] * 1500000) + \']\'\n'
        "blob = base64.b64encode(zlib.compress(pickle.dumps(t), 9)).decode()\n"
        "del t\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    decode_private_tests(blob)\nexcept ValueError as e:\n    print(e)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)  # fmt: skip
    message, grew_kb = proc.stdout.splitlines()
    assert "more than 80000 JSON values" in message
    assert int(grew_kb) < 200 << 10, f"grew {int(grew_kb) >> 10} MiB"


def test_base64_json_blob_in_lcb_is_counted_too() -> None:
    from cppo_bench.benchmarks.livecodebench import decode_private_tests

    text = "[" + ",".join(['{"input":"","output":""}'] * 100_000) + "]"
    with pytest.raises(ValueError, match="more than 80000 JSON values"):
        decode_private_tests(text)
    blob = base64.b64encode(zlib.compress(pickle.dumps(text))).decode()
    with pytest.raises(ValueError, match="more than 80000 JSON values"):
        decode_private_tests(blob)


def test_manifest_with_a_million_repeated_ids_is_linear() -> None:
    from cppo_bench.store.schema import SCHEMAS

    doc = {"problem_ids": ["a"] * 1_000_000}
    from cppo_bench.store.schema import _ids_consistent

    assert _ids_consistent(doc) == "problem id 'a' is listed twice"
    assert SCHEMAS.get("run_manifest")


# --- 4. one schema at the door ------------------------------------------------------------------


@pytest.mark.parametrize("args, needle", [
    (["--temperature", "nan"], "temperature: must be a finite number, got nan"),
    (["--temperature", "inf"], "temperature: must be a finite number, got inf"),
    (["--top-p", "2"], "option 'top_p'"),
    (["--k", "100000000"], "option 'k': 100000000 is outside 1..65536"),
    (["--model", "m\u2066x"], "option 'model': holds a control character"),
    (["--model", "m\nx"], "option 'model': holds a control character"),
    (["--seeds", str(2**64)], "seed"),
])  # fmt: skip
def test_run_options_refused_before_any_work(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "runs"
    result = _cli("run", "--bench", "demo", "--method", "direct", "--backend",
                  "run_scripted:make", "--out", str(out), "--quiet", *args)  # fmt: skip
    _one_line_error(result, needle)
    assert not out.exists()  # nothing started


@pytest.mark.parametrize("kind", ["dangling", "file"])
def test_run_out_that_is_not_a_folder(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "runs"
    if kind == "dangling":
        out.symlink_to(tmp_path / "nowhere")
    else:
        out.write_text("mine\n")
    result = _cli("run", "--bench", "demo", "--method", "direct", "--backend",
                  "run_scripted:make", "--out", str(out), "--quiet", "--limit", "1")  # fmt: skip
    _one_line_error(result, str(out))
    assert kind == "dangling" or out.read_text() == "mine\n"


@pytest.mark.parametrize("args, needle", [
    (["--time-limit", "1e300"], "time_limit: 1e+300 is outside"),
    (["--time-limit", "inf"], "--time-limit: must be a finite number, got inf"),
    (["--memory-mb", str(10**14)], "memory_mb: 100000000000000 is outside"),
])  # fmt: skip
def test_verify_limits_refused(args: list[str], needle: str) -> None:
    _one_line_error(_cli("verify", "--bench", "demo", "--reference", *args), needle)


@pytest.mark.parametrize("limits", [{"time_s": float("nan")}, {"time_s": -1},
                                    {"time_s": 1e300}, {"memory_mb": 10**14}])  # fmt: skip
def test_api_verify_limits_refused(limits: dict) -> None:
    from cppo_bench import api
    from cppo_bench.benchmarks import load_benchmark

    problem = load_benchmark("demo").problems[0]
    with pytest.raises(DataError, match="limit "):
        api.verify([problem], ["print(input())"], **limits)


def test_generation_cache_and_records_share_the_token_range(tmp_path: Path) -> None:
    from cppo_bench.backends.base import GenRequest, GenResult, SamplingParams
    from cppo_bench.store.gencache import GenCache, _entry
    from cppo_bench.store.schema import SCHEMAS

    line = {"key": "k", "text": "t", "finish_reason": "stop", "num_tokens": 2**70}
    assert _entry(json.dumps(line)) is None  # the cache reader refuses what records refuse
    cache = GenCache(tmp_path / "run" / "gen_cache.jsonl", root=tmp_path)
    req = GenRequest(SamplingParams(), prompt="prompt", tag="p1")
    with pytest.raises(DataError, match="token count"):
        cache.put_many([("k", req, GenResult(text="t", num_tokens=2**70, finish_reason="stop"))])
    branch = {"index": 0, "code": "", "completion": "", "verdict": "AC", "passed": True,
              "solver_tokens": 2**63}  # fmt: skip
    why = SCHEMAS.get("run_record").check({"problem_id": "p", "branches": [branch]})
    assert why and "solver_tokens" in why
    # the writer refuses what the readers refuse: a record summing to past the range
    from cppo_bench.store.runs import Branch, ProblemRecord, append_records, read_records

    branches = [Branch(i, "", "", "AC", True, solver_tokens=2**40) for i in range(2)]
    record = ProblemRecord("p", branches, solver_tokens=2**41)
    with pytest.raises(DataError, match="refusing to store the record of problem 'p'"):
        append_records(tmp_path / "run", [record], root=tmp_path)
    assert read_records(tmp_path / "run") == {}


def test_trainer_keep_folders_and_nan_are_config_errors() -> None:
    pytest.importorskip("torch")
    from trainers.engine.config import TrainConfig
    from trainers.engine.layers import ConfigError

    for bad in ({"keep_folders": -100}, {"lr": float("nan")}, {"temperature": float("inf")}):
        with pytest.raises(ConfigError):
            TrainConfig(**bad)
