"""Issue 37: each class of stranger's input through every command and API call that takes it.
Every case must end in one line naming the file or value and what is wrong: no traceback,
no hang (a FIFO case runs in a subprocess whose timeout is only a hang guard, never a
timing), nothing executed, lost or written outside the output folder. Memory is bounded
where a size is the attack: ru_maxrss growth of a fresh process, stated per test."""

from __future__ import annotations

import base64
import errno
import json
import os
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_plant import N, Plant, _write

from cppo_bench.cli import main
from cppo_bench.problem import DataError
from cppo_bench.termsafe import unsafe_char

ROOT = Path(__file__).resolve().parents[1]
# one of each class: C0, C1, DEL, bidi isolate / override / mark, Arabic letter mark,
# zero-width, BOM, line separator, a tag character (astral Cf)
EVIL = ["\x1b]0;t\x07", "\x9b", "\x7f", "\u2066", "\u202e", "\u200f", "\u061c", "\u200b",
        "\ufeff", "\u2028", "\U000e0041"]  # fmt: skip
HANG_GUARD_S = 120  # a FIFO read that blocks would never return: fail instead of hanging


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cppo_bench", *args], capture_output=True,
                          text=True, timeout=HANG_GUARD_S, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}",
                               **(env or {})})  # fmt: skip


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
        "t = '[' + ','.join(['{\"input\":\"\",\"output\":\"\",\"testtype\":\"stdin\"}'] * 1500000) + ']'\n"
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


def test_manifest_with_a_million_repeated_ids_is_linear() -> None:
    from cppo_bench.schema import SCHEMAS

    doc = {"problem_ids": ["a"] * 1_000_000}
    from cppo_bench.schema import _ids_consistent

    assert _ids_consistent(doc) == "problem id 'a' is listed twice"
    assert SCHEMAS.get("run_manifest")


# --- 4. one schema at the door ------------------------------------------------------------------


@pytest.mark.parametrize("args, needle", [
    (["--temperature", "nan"], "option 'temperature': nan is not finite"),
    (["--temperature", "inf"], "option 'temperature': inf is not finite"),
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
    (["--time-limit", "1e300"], "--time-limit: 1e+300 is outside"),
    (["--time-limit", "inf"], "--time-limit: inf is not finite"),
    (["--memory-mb", str(10**14)], "--memory-mb: 100000000000000 is outside"),
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
    from cppo_bench.gencache import GenCache, _entry
    from cppo_bench.schema import SCHEMAS

    line = {"key": "k", "text": "t", "finish_reason": "stop", "num_tokens": 2**70}
    assert _entry(json.dumps(line)) is None  # the cache reader refuses what records refuse
    cache = GenCache(tmp_path / "run" / "gen_cache.jsonl")
    req = GenRequest("prompt", SamplingParams(), tag="p1")
    with pytest.raises(DataError, match="token count"):
        cache.put_many([("k", req, GenResult(text="t", num_tokens=2**70, finish_reason="stop"))])
    branch = {"index": 0, "code": "", "completion": "", "verdict": "AC", "passed": True,
              "solver_tokens": 2**63}  # fmt: skip
    why = SCHEMAS.get("run_record").check({"problem_id": "p", "branches": [branch]})
    assert why and "solver_tokens" in why
    # the writer refuses what the readers refuse: a record summing to past the range
    from cppo_bench.runstore import Branch, ProblemRecord, append_records, read_records

    branches = [Branch(i, "", "", "AC", True, solver_tokens=2**40) for i in range(2)]
    record = ProblemRecord("p", branches, solver_tokens=2**41)
    with pytest.raises(DataError, match="refusing to store the record of problem 'p'"):
        append_records(tmp_path / "run", [record])
    assert read_records(tmp_path / "run") == {}


def test_trainer_keep_folders_and_nan_are_config_errors() -> None:
    pytest.importorskip("torch")
    from trainers.engine.config import TrainConfig
    from trainers.engine.layers import ConfigError

    for bad in ({"keep_folders": -100}, {"lr": float("nan")}, {"temperature": float("inf")}):
        with pytest.raises(ConfigError):
            TrainConfig(**bad)


# --- 5. a stranger's training log and model names drawn in figures ------------------------------


@pytest.mark.parametrize("manifest, metrics, skipped", [
    ("[]", '{"step": 1, "grad_norm": 1}\n', True),  # not an object: AttributeError before
    ('{"algorithm": "pkpo", "seed": 1e400}', '{"step": 1}\n', True),  # OverflowError before
    ('{"algorithm": "pkpo"}', "[" * 5000 + "]" * 5000 + "\n", True),  # RecursionError before
    # a number no float holds (OverflowError before): that point is not drawn, the run is
    ('{"algorithm": "pkpo"}', '{"step": 1, "grad_norm": ' + "9" * 400 + "}\n", False),
])  # fmt: skip
def test_malformed_training_logs_skip_that_run(tmp_path: Path, manifest: str, metrics: str,
                                               skipped: bool) -> None:
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    bad = runs / "train" / "bad"
    bad.mkdir(parents=True)
    (bad / "train_manifest.json").write_text(manifest)
    (bad / "metrics.jsonl").write_text(metrics)
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert ("training run skipped" in result.output) == skipped
    assert str(bad) in result.output or not skipped


@pytest.mark.parametrize("model", ["$\\frac{a}{b}$", "{" * 450 + "x" + "}" * 450, "$x", "a_b^c"])
def test_model_names_in_figures_are_plain_text(tmp_path: Path, model: str) -> None:
    runs = tmp_path / "runs"
    good = runs / "train" / "run0"
    good.mkdir(parents=True)
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    (good / "train_manifest.json").write_text(json.dumps({"algorithm": "pkpo",
                                                          "base_model": model, "seed": 0}))
    (good / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "epoch": s / 4, "grad_norm": 1.0 + s}) + "\n" for s in range(4)))
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "out" / "figures").glob("*pkpo*.png"))


# --- 6. the store's file system can fail ----------------------------------------------------------


def test_lock_naming_an_impossible_pid_is_stale(tmp_path: Path) -> None:
    import socket

    from cppo_bench.runlock import RunLock, lock_path

    run_dir = tmp_path / "run"
    lock_path(run_dir).write_text(json.dumps({"host": socket.gethostname(), "pid": 2**64,
                                              "start": "1"}))  # fmt: skip
    with RunLock(run_dir, 0):
        pass
    assert not lock_path(run_dir).exists()


@pytest.mark.parametrize("err", [errno.EROFS, errno.ENOSPC, errno.EACCES])
def test_lock_and_atomic_write_on_a_failing_disk(tmp_path: Path, monkeypatch, err: int) -> None:
    from cppo_bench import runlock, storefs

    target = tmp_path / "manifest.json"
    target.write_text("old\n")
    real_open = os.open

    def failing(path, flags, *a):  # noqa: ANN001, ANN202
        if flags & os.O_CREAT:
            raise OSError(err, os.strerror(err), str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(storefs.os, "open", failing)
    with pytest.raises(DataError) as e:
        storefs.write_atomic(target, "new\n")
    assert str(e.value).startswith(f"{target}: cannot write") and "\n" not in str(e.value)
    assert target.read_text() == "old\n"  # nothing lost
    monkeypatch.setattr(runlock.os, "open", failing)
    with pytest.raises(DataError, match="cannot take the run's lock"):
        runlock.RunLock(tmp_path / "run", 0).acquire()


def test_full_disk_midway_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    from cppo_bench import storefs

    target = tmp_path / "manifest.json"
    target.write_text("old\n")
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):  # noqa: ANN001
            self.fh = fh

        def __enter__(self):  # noqa: ANN204
            return self

        def __exit__(self, *exc):  # noqa: ANN002, ANN204
            self.fh.close()

        def write(self, data):  # noqa: ANN001, ANN201
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storefs.os, "fdopen", lambda fd, *a, **k: Full(real_fdopen(fd, *a, **k)))
    with pytest.raises(DataError, match="No space left on device"):
        storefs.write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # no temp left


def test_a_full_disk_during_a_run_is_one_line_and_the_resume_completes(tmp_path: Path,
                                                                       monkeypatch) -> None:
    from cppo_bench import storefs

    out = tmp_path / "runs"
    args = ["run", "--bench", "demo", "--method", "direct", "--backend", "run_scripted:make",
            "--out", str(out), "--quiet", "--limit", "4", "--chunk-size", "2"]  # fmt: skip
    real_open = os.open
    calls = {"n": 0}

    def full(path, flags, *a):  # noqa: ANN001, ANN202
        if str(path).endswith("records.jsonl") and flags & os.O_APPEND:
            calls["n"] += 1
            if calls["n"] == 2:  # the second chunk's append: the disk is full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(storefs.os, "open", full)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "records.jsonl: No space left on device" in result.output
    monkeypatch.setattr(storefs.os, "open", real_open)
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    listing = json.loads(CliRunner().invoke(main, ["runs", "--out", str(out), "--json"]).output)
    assert listing["done"] == 4 and listing["status"] == "complete"


# --- 7. one bad run does not hide the good ones ---------------------------------------------------


def test_one_bad_manifest_leaves_the_good_runs_counted(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for model in ("good", "bad"):
        _write(runs, Plant("direct", model, "demo", 0, [[True] * 4] * N, planner=[0] * N,
                           solver=[0] * N))  # fmt: skip
    bad = next(p for p in runs.rglob("manifest.json") if "/bad/" in str(p))
    doc = json.loads(bad.read_text())
    doc["k"] = "four"
    bad.write_text(json.dumps(doc))
    result = _cli("stats", "passk", "--runs", str(runs))
    assert result.returncode == 0, result.stderr
    assert "pass@1" in result.stdout and "n=24" in result.stdout
    assert "skipped 1 unreadable run(s)" in result.stderr and str(bad) in result.stderr

    from cppo_bench import load_runs

    frame = load_runs(runs)
    assert set(frame["model"]) == {"good"} and frame.attrs["skipped"]["runs"] == 1
    report = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert report.exit_code == 0, report.output
    assert "1 unreadable run(s) and 0 bad record line(s) left out" in report.output


def test_hand_edited_record_lines_are_named_and_counted(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip
    rec = next(runs.rglob("records.jsonl"))
    lines = rec.read_text().splitlines()
    a, b = json.loads(lines[0]), json.loads(lines[1])
    a["problem_id"] = [1]
    b["branches"][0]["passed"] = "false"
    rec.write_text("\n".join([json.dumps(a), json.dumps(b), *lines[2:]]) + "\n")
    result = CliRunner().invoke(main, ["runs", "--out", str(runs), "--json"])
    row = json.loads(result.output.splitlines()[-1])
    assert row["done"] == N - 2 and "2 bad line(s) skipped" in row["status"]
    assert any(s.startswith(f"{rec}:1:") for s in row["skipped"])
    assert any(s.startswith(f"{rec}:2:") for s in row["skipped"])


def test_a_lying_model_folder_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import shutil
    import struct

    from toy_task import toy_model_dir

    from cppo_bench.backends.base import ModelLoadError
    from cppo_bench.backends.hf_load import load_model

    base = toy_model_dir(tmp_path / "base")
    lie, remote = tmp_path / "lie", tmp_path / "remote"
    shutil.copytree(base, lie)
    shutil.copytree(base, remote)
    data = (lie / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"] = [0, 10**12]
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    (lie / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n :])
    config = json.loads((remote / "config.json").read_text())
    config.update(model_type="evil", auto_map={"AutoConfig": "evil.C",
                                               "AutoModelForCausalLM": "evil.M"})  # fmt: skip
    (remote / "config.json").write_text(json.dumps(config))
    (remote / "evil.py").write_text(f"open({str(tmp_path / 'PWNED')!r}, 'w')\n")
    import torch

    for folder in (lie, remote):
        with pytest.raises(ModelLoadError) as err:
            load_model(str(folder), dtype=torch.float32)
        assert str(folder) in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "PWNED").exists()


def test_base64_json_blob_in_lcb_is_counted_too() -> None:
    from cppo_bench.benchmarks.livecodebench import decode_private_tests

    text = "[" + ",".join(['{"input":"","output":""}'] * 100_000) + "]"
    with pytest.raises(ValueError, match="more than 80000 JSON values"):
        decode_private_tests(text)
    blob = base64.b64encode(zlib.compress(pickle.dumps(text))).decode()
    with pytest.raises(ValueError, match="more than 80000 JSON values"):
        decode_private_tests(blob)
