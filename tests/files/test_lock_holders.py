"""Lock files naming this host with a pid or start time our own lock never holds (issue 37
item 6: pid 2**64 raised OverflowError): each is one line or the right stale decision.
A pid that names no process is stale at once; anything else we cannot judge ("abc", a
float, a NaN start time, a huge or deeply nested file) holds the run while the file is
fresh and is broken once it is older than STALE_AFTER_S, like another host's lock."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.errors import DataError, RunLockedError
from cppo_bench.files.lock import STALE_AFTER_S, RunLock, lock_path

HOST = socket.gethostname()
NO_PROCESS = [0, -1, -(2**64), 2**31, 2**64, 2**1000]  # ints that name no process here
UNJUDGED = {
    "pid abc": {"host": HOST, "pid": "abc"},
    "pid true": {"host": HOST, "pid": True},
    "pid 1.5": {"host": HOST, "pid": 1.5},
    "pid null": {"host": HOST, "pid": None},
    "pid list": {"host": HOST, "pid": [os.getpid()]},
    "live pid, NaN start": {"host": HOST, "pid": os.getpid(), "start": float("nan")},
    "live pid, start 7": {"host": HOST, "pid": os.getpid(), "start": 7},
    "no host": {"pid": os.getpid()},
    "a list": [1, 2, 3],
}
RAW = {
    "huge": b"{" + b" " * (4 << 20) + b"}",  # read only up to its cap
    "nested": b"[" * 100_000,  # json's recursion limit, not a RecursionError traceback
    "binary": bytes(range(256)) * 10,
    "empty": b"",
}


def _plant(run_dir: Path, raw: bytes, age_s: float = 0.0) -> Path:
    path = lock_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    if age_s:
        old = time.time() - age_s
        os.utime(path, (old, old))
    return path


def _doc(doc: object) -> bytes:
    return json.dumps(doc).encode()  # allow_nan: the NaN start is written as JSON's NaN


@pytest.mark.parametrize("pid", NO_PROCESS)
def test_a_pid_that_names_no_process_is_stale_at_once(tmp_path, pid) -> None:
    run_dir = tmp_path / "run"
    _plant(run_dir, _doc({"host": HOST, "pid": pid, "start": "1"}))
    with RunLock(run_dir):
        assert json.loads(lock_path(run_dir).read_text())["pid"] == os.getpid()
    assert not lock_path(run_dir).exists()


@pytest.mark.parametrize("name", sorted(UNJUDGED) + sorted(RAW))
def test_a_lock_we_cannot_judge_holds_while_fresh_and_breaks_when_old(tmp_path, name) -> None:
    raw = RAW[name] if name in RAW else _doc(UNJUDGED[name])
    run_dir = tmp_path / "run"
    path = _plant(run_dir, raw)
    with pytest.raises(RunLockedError) as err:
        RunLock(run_dir).acquire()
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert path.read_bytes() == raw  # a held lock is never touched
    _plant(run_dir, raw, age_s=STALE_AFTER_S + 60)
    with RunLock(run_dir):
        assert json.loads(path.read_text())["pid"] == os.getpid()


def test_a_dead_pid_with_a_nan_start_is_stale(tmp_path) -> None:
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    run_dir = tmp_path / "run"
    _plant(run_dir, _doc({"host": HOST, "pid": int(child.stdout), "start": float("nan")}))
    with RunLock(run_dir):
        pass


def test_a_folder_at_the_lock_is_one_line(tmp_path) -> None:
    run_dir = tmp_path / "run"
    lock_path(run_dir).mkdir(parents=True)
    with pytest.raises(DataError, match="folder") as err:
        RunLock(run_dir).acquire()
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("pid", [2**64, "abc"])
def test_run_with_such_a_lock_is_one_line_or_runs(tmp_path, pid) -> None:
    out = tmp_path / "runs"
    args = ["run", "--bench", "demo", "--method", "direct", "--backend", "run_scripted:make",
            "--out", str(out), "--quiet", "--limit", "1"]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    (run_dir,) = [p.parent for p in out.rglob("manifest.json")]
    _plant(run_dir, _doc({"host": HOST, "pid": pid, "start": "1"}))
    result = CliRunner().invoke(main, [*args[:-1], "2"])
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None)
    if pid == "abc":  # fresh, unjudged: held, one line naming the lock
        assert result.exit_code == 1 and "run in use by" in result.output, result.output
    else:  # no such process: broken, and the run goes on
        assert result.exit_code == 0, result.output


def test_a_stale_lock_on_a_read_only_disk_is_one_line_not_a_spin(tmp_path) -> None:
    """The stale lock cannot be renamed away: retrying spun for ever; now one line."""
    import threading

    from small_fs import READ_ONLY, small_fs

    with small_fs(tmp_path / "fs") as fs:
        run_dir = fs.root / "run"
        path = _plant(run_dir, _doc({"host": HOST, "pid": 2**40, "start": "1"}))
        fs.read_only()
        outcome: list[BaseException | None] = []
        finished = threading.Event()

        def take() -> None:
            try:
                RunLock(run_dir).acquire()
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                outcome.append(exc)
            finished.set()

        threading.Thread(target=take, daemon=True).start()
        assert finished.wait(120), "acquire spun on a lock it cannot break"
        (err,) = outcome
        assert isinstance(err, DataError) and not isinstance(err, RunLockedError), err
        assert str(path) in str(err) and READ_ONLY in str(err) and "\n" not in str(err)
