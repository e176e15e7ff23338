"""Hostile programs, each run through `cppo-bench verify`: none gets AC, the harness finishes,
nothing leaks (no files, no network traffic, no processes), and the same sandbox then still
judges an honest program correctly."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import sandbox as sandbox_module

MARK = f"cppo-hostile-{uuid.uuid4().hex}"
SECRET = f"secret-{uuid.uuid4().hex}"


class Listener:
    """A TCP listener on 127.0.0.1 that records every byte any client sends it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.settimeout(1)
            try:
                self.received.append(conn.recv(1024))
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def hostile_programs(tmp: Path, port: int) -> dict[str, tuple[str, set[str]]]:
    """name -> (program, acceptable verdicts)."""
    outside = tmp / "outside" / "written.txt"
    return {
        "fork_bomb": ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                      "        pass", {"TLE", "MLE"}),
        "memory_bomb": ("x = ' ' * (10 ** 10)", {"MLE"}),
        "memory_growth": ("chunks = []\nwhile True:\n    chunks.append(' ' * 10 ** 6)", {"MLE"}),
        "infinite_loop": ("while True:\n    pass", {"TLE"}),
        "sleep_past_limit": ("import time\ntime.sleep(100)", {"TLE"}),
        "write_outside_scratch": (
            f"import os\nos.makedirs({str(outside.parent)!r}, exist_ok=True)\n"
            f"open({str(outside)!r}, 'w').write('pwned')\nprint('written')", {"WA", "RE"}),
        "read_outside_sandbox": (f"print(open({str(tmp / 'secret.txt')!r}).read())", {"RE"}),
        "network": (f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), 2)\n"
                    "s.sendall(b'leak')\nprint('sent')", {"RE"}),
        "kill_parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                        "print('still here')", {"WA", "RE"}),
        "daemon": ("import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                   "        os.execv(sys.executable, [sys.executable, '-c', "
                   f"'import time; time.sleep(120)', {MARK!r}])\n    os._exit(0)\n"
                   "print('parent done')", {"RE"}),  # a test may not fork (issue 26)
        "gigabyte_output": ("import sys\nblock = 'x' * 10 ** 6\nfor _ in range(1000):\n"
                            "    sys.stdout.write(block)", {"WA"}),
        "os_exit_no_output": ("import os\nos._exit(0)", {"WA"}),
        "monkeypatch_builtins": ("import builtins, sys\nbuiltins.print = lambda *a, **k: None\n"
                                 "sys.exit = lambda *a: None\nbuiltins.exit = lambda *a: None\n"
                                 "print('AC')\nexit(0)", {"WA"}),
        "forge_status_report": ("import os\nos.write(3, b'{\"ok\": true}')\nos._exit(0)", {"WA"}),
    }  # fmt: skip


def problem_file(tmp: Path) -> Path:
    hostile = Problem("demo", "hostile", "", tests=(Case("go\n", f"{SECRET}\n"),),
                      time_limit_s=1.0, memory_limit_mb=128, checker="lcb")  # fmt: skip
    echo = Problem("demo", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
    path = tmp / "problems.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in (hostile, echo)))
    return path


def stray_processes() -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if MARK.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(entry)
            except OSError:
                pass
    return found


def zombie_children() -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] == "Z":
            out.append(entry)
    return out


@pytest.fixture
def world(tmp_path: Path):
    (tmp_path / "secret.txt").write_text(f"{SECRET}\n")
    listener = Listener()
    yield tmp_path, listener
    listener.close()


NAMES = list(hostile_programs(Path("/x"), 0))


@pytest.mark.parametrize("name", NAMES)
def test_hostile_program_through_the_cli(name: str, world) -> None:
    tmp, listener = world
    code, allowed = hostile_programs(tmp, listener.port)[name]
    programs = tmp / "programs.jsonl"
    programs.write_text(json.dumps({"problem_id": "hostile", "code": code}) + "\n"
                        + json.dumps({"problem_id": "echo", "code": "print(input())"}) + "\n")  # fmt: skip
    out = tmp / "results.jsonl"
    args = ["verify", "--bench", "demo", "--data", str(problem_file(tmp)), "--programs",
            str(programs), "--out", str(out), "--workers", "1", "--output-mb", "4"]  # fmt: skip
    started = time.monotonic()
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 60  # the harness finishes
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["verdict"] in allowed and not rows[0]["passed"], rows[0]
    assert rows[1]["verdict"] == "AC", rows[1]  # the sandbox is still sound afterwards
    assert not (tmp / "outside").exists()
    assert listener.received == [] and listener.connections == 0
    time.sleep(0.2)
    assert stray_processes() == []
    assert zombie_children() == []


@pytest.mark.parametrize("mode", ["unshare", "rlimits"])
def test_fallback_modes_contain_the_worst_offenders(mode: str, world, monkeypatch, caplog) -> None:
    tmp, listener = world
    monkeypatch.setenv(sandbox_module.MODE_ENV, mode)
    monkeypatch.setattr(sandbox_module, "_MODE", None)
    monkeypatch.setattr(sandbox_module, "_WARNED", set())
    from cppo_bench.verifier import VerifyJob, verify_batch

    programs = hostile_programs(tmp, listener.port)
    names = ["fork_bomb", "network", "read_outside_sandbox", "write_outside_scratch",
             "kill_parent", "daemon"]  # fmt: skip
    problems = {p.problem_id: p for p in
                (Problem.from_dict(json.loads(line)) for line in
                 problem_file(tmp).read_text().splitlines())}  # fmt: skip
    jobs = [VerifyJob(problems["hostile"], programs[n][0]) for n in names]
    jobs.append(VerifyJob(problems["echo"], "print(input())"))
    with caplog.at_level("WARNING", logger="cppo_bench.verifier"):
        results = verify_batch(jobs, workers=2)
        verify_batch(jobs[-1:], workers=1)
    assert [r.passed for r in results] == [False] * len(names) + [True]
    for name, r in zip(names, results, strict=False):
        assert r.verdict in programs[name][1], (name, r)
    assert all(r.sandbox.startswith(mode) for r in results)
    warnings = [rec for rec in caplog.records if "weaker" in rec.getMessage()]
    assert len(warnings) == 1  # said clearly, once
    assert not (tmp / "outside").exists()
    assert listener.received == []
    time.sleep(0.2)
    assert stray_processes() == [] and zombie_children() == []


def test_the_real_command_line_entry_point(world) -> None:
    """The installed entry point, in a fresh interpreter: the daemon case end to end."""
    tmp, listener = world
    code, _ = hostile_programs(tmp, listener.port)["daemon"]
    programs = tmp / "programs.jsonl"
    programs.write_text(json.dumps({"problem_id": "hostile", "code": code}) + "\n{not json\n"
                        + json.dumps({"problem_id": "nope", "code": "print(1)"}) + "\n")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "cppo_bench", "verify", "--bench", "demo", "--data",
         str(problem_file(tmp)), "--programs", str(programs)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1  # bad lines are reported, the rest still verified
    assert f"{programs}:2: not valid JSON" in proc.stderr
    assert f"{programs}:3: unknown problem id 'nope'" in proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["verdict"] for r in rows] == ["RE"]  # its fork refused (issue 26)
    time.sleep(0.2)
    assert stray_processes() == []
