"""Small things a researcher hits (issue 38 item 10): refused sampling settings, aliases through
the registries, hints for other harnesses' flags, Ctrl-C of an openai run heard at once,
`doctor` and chromium, `run --help` naming every method."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

from cppo_bench import api
from cppo_bench.backends.base import SamplingError, SamplingParams
from cppo_bench.benchmarks import BENCHMARKS, load_benchmark
from cppo_bench.methods import METHODS
from cppo_bench.store.runs import iter_runs, read_manifest

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    "settings", [{"temperature": -1.0}, {"top_p": 0.0}, {"top_p": 1.5}, {"max_tokens": 0}]
)
def test_sampling_settings_no_backend_honours_are_refused(settings, tmp_path):
    with pytest.raises(SamplingError):
        SamplingParams(**settings)
    with pytest.raises(SamplingError):  # the API, before any data loads or run is made
        api.run("direct", "demo", backend=ScriptedBackend(), out=tmp_path, **settings)
    assert not list(iter_runs(tmp_path))
    SamplingParams(temperature=0.0)  # greedy is fine


def test_negative_temperature_is_one_line_from_the_cli(tmp_path):
    result = invoke(["run", "--method", "direct", "--bench", "demo", "--temperature", "-1",
                     "--out", str(tmp_path), "--quiet"], ScriptedBackend())  # fmt: skip
    assert result.exit_code == 1
    assert result.output.strip() == "Error: option 'temperature': -1.0 is outside 0.0..100.0"


def test_aliases_go_through_the_registries_and_store_the_one_name(tmp_path):
    assert METHODS.get("plan-and-solve") is METHODS.get("plan_and_solve")
    assert BENCHMARKS.get("livecodebench") is BENCHMARKS.get("lcb")
    assert BENCHMARKS.get("code_contests") is BENCHMARKS.get("codecontests")
    assert "plan-and-solve" not in METHODS.names()  # listed once, under its name
    problems = load_benchmark("demo").problems[:1]
    api.run("plan-and-solve", "demo", backend=ScriptedBackend(problems), k=1, limit=1,
            out=tmp_path)  # fmt: skip
    (run,) = iter_runs(tmp_path)
    assert read_manifest(run).method == "plan_and_solve"


@pytest.mark.parametrize(
    "flag,hint",
    [
        ("--model_args=pretrained=x", "--model NAME plus -b KEY=VALUE"),
        ("--gen_kwargs", "--temperature, --top-p and --max-tokens"),
        ("--tasks", "--bench here"),
    ],
)
def test_other_harnesses_flags_get_a_hint_line(flag, hint):
    args = ["run", "--method", "direct", "--bench", "demo", flag]
    if "=" not in flag:
        args.append("x")
    result = invoke(args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("hint: ") and hint in lines[-1], result.output


def test_lcb_release_version_flag_is_lcb_s_own_spelling(tmp_path):
    # --release_version reaches the loader as its release_version option: a loader without
    # it (demo) refuses it by name, as it refuses -o release_version
    result = invoke(["data", "show", "--bench", "demo", "--release_version", "release_v1"])
    assert result.exit_code == 1 and "release_version" in result.output, result.output


def test_run_help_lists_every_method_in_full():
    text = invoke(["run", "--help"]).output
    flat = " ".join(text.split()).replace("- ", "-")
    for name in METHODS.names():
        assert name in flat
    assert "..." not in text


def test_doctor_checks_for_chromium(monkeypatch):
    import cppo_bench.api.doctor as doc

    monkeypatch.setattr(doc.shutil, "which", lambda name: None)
    check = doc.check_chromium()
    assert check.status == doc.MISSING and "apt-get install chromium" in check.fix
    monkeypatch.setattr(doc.shutil, "which", lambda n: "/x/chromium" if n == "chromium" else None)
    assert doc.check_chromium().detail == "/x/chromium"
    assert "chromium" in doc.CHECKS


class _HangServer(ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Hang)
        self.arrived, self.release = threading.Event(), threading.Event()


class _Hang(BaseHTTPRequestHandler):
    """Takes a request and never answers it until the test lets it go."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        server = self.server
        assert isinstance(server, _HangServer)
        server.arrived.set()
        server.release.wait()
        body = json.dumps({"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]})
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_ctrl_c_of_an_openai_run_is_heard_at_once_and_abandons_requests(tmp_path):
    server = _HangServer(("127.0.0.1", 0))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    cmd = [sys.executable, "-m", "cppo_bench.cli", "run", "--method", "direct", "--bench", "demo",
           "--limit", "2", "-k", "2", "--backend", "openai", "--base-url", url, "--model", "m",
           "--out", str(tmp_path), "--quiet"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.arrived.wait(120), "no request reached the server"
        proc.send_signal(signal.SIGINT)
        # the server still holds every request: the run must end without their answers
        _, err = proc.communicate(timeout=120)
    finally:
        server.release.set()
        proc.kill()
        server.shutdown()
    assert proc.returncode == 130, err
    assert "interrupt received: stopping" in err
    assert "resume with: cppo-bench run" in err
