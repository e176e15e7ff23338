"""Bad requests against a real `cppo-bench serve`: each gets one JSON line with its status and
the service keeps serving; a flood past the queue gets 429 + Retry-After; SIGTERM drains (the
admitted request finishes, new ones get 503, then the process exits 0); no token, no public
bind."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from serve_process import ROOT, Service, raw  # noqa: E402

import cppo_bench as cb  # noqa: E402
from cppo_bench.serve.client import VerifierServiceError  # noqa: E402

TOKEN = "t0k3n-" + "x" * 20
ECHO: dict[str, Any] = {
    "code": "print(input())",
    "problem": {"tests": [{"input": "a\n", "output": "a\n"}]},
}
# a program that holds its lane 6 s (sleeping: no CPU taken from the other tests), far longer
# than the quick requests a test sends meanwhile, even on a loaded machine; the wall backstop
# (2 x 5 s + 1 s) leaves it AC
SLOW = {"code": "import time\ntime.sleep(6)\nprint(input())",
        "problem": {"tests": [{"input": "a\n", "output": "a\n"}], "time_limit_s": 5.0}}  # fmt: skip


def post(svc: Service, payload: object, token: str | None = TOKEN, **kw) -> tuple[int, dict, dict]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return raw(svc.url + "/verify", body, token=token, **kw)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    svc = Service("--workers", "1", "--queue-size", "1", "--max-programs", "3",
                  "--max-tests", "2", "--max-body-mb", "1", env={"CPPO_SERVE_TOKEN": TOKEN})  # fmt: skip
    yield svc
    svc.stop()


BAD = [
    (b"{not json", 400, "not valid JSON"),
    (b"\xff\xfe", 400, "not valid JSON"),
    (b"[1, 2]", 422, "body"),
    (json.dumps({"items": [{"code": 1, "problem": ECHO["problem"]}]}).encode(), 422, "items.0.code"),
    (json.dumps({"items": []}).encode(), 422, "items"),
    (json.dumps({"items": [ECHO], "extra": 1}).encode(), 422, "extra"),
    (json.dumps({"items": [{"code": "x"}]}).encode(), 422, "give 'problem' or 'problem_id'"),
    (json.dumps({"items": [{"code": "x", "problem_id": "nope"}]}).encode(), 422, "unknown problem"),
    (json.dumps({"items": [{"code": "x", "problem": {"tests": [
        {"input": "1", "output": "1", "mode": "call"}]}}]}).encode(), 422, "fn_name"),
    (json.dumps({"items": [ECHO] * 4}).encode(), 413, "over the cap of 3"),
    (json.dumps({"items": [{"code": "x", "problem": {"tests": [ECHO["problem"]["tests"][0]] * 3}}]}).encode(), 413, "3 tests"),
    (json.dumps({"items": [ECHO], "limits": {"output_mb": 999}}).encode(), 413, "output_mb"),
    (json.dumps({"items": [ECHO], "limits": {"time_s": float("nan")}}).encode(), 400, "JSON"),
    (json.dumps({"items": [ECHO], "limits": {"time_s": -1.0}}).encode(), 422, "time_s"),
    (b"[" * 600_000 + b"]" * 600_000, 413, "cap"),
    (b"[" * 100_000 + b"]" * 100_000, 400, "JSON"),  # deep, under the cap: a parse error
    (json.dumps({"items": [{"code": "x" * (2 << 20), "problem": ECHO["problem"]}]}).encode(), 413, "cap"),
    (b"[" * 50_000, 400, "JSON"),
    (b'{"items": [{"code": "x", "\\ud800": 1}]}', 422, "items.0"),  # a lone surrogate key
    # a key given twice: a proxy that reads the first would see another request
    (b'{"items": [{"code": "x", "code": "y", "problem_id": "p"}]}', 400, "appears twice"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "status", "says"), BAD, ids=range(len(BAD)))
def test_a_bad_request_gets_one_line_and_the_service_serves(guarded, body, status, says) -> None:
    code, reply, _ = post(guarded, body)
    assert code == status, reply
    assert list(reply) == ["error"] and says in reply["error"] and "\n" not in reply["error"]
    assert "Traceback" not in reply["error"]
    ok, good, _ = post(guarded, {"items": [ECHO]})
    assert ok == 200 and good["results"][0]["verdict"] == "AC"


@pytest.mark.parametrize("given", [None, "wrong-" + "y" * 20, TOKEN + "x", f"Basic {TOKEN}"])
def test_a_missing_or_wrong_token_is_401(guarded, given) -> None:
    headers = {"Authorization": given} if given and given.startswith("Basic") else {}
    token = None if given is None or given.startswith("Basic") else given
    for path, body in (("/verify", json.dumps({"items": [ECHO]}).encode()), ("/metrics", None)):
        code, reply, _ = raw(guarded.url + path, body, token=token, headers=headers)
        assert code == 401 and reply == {"error": "missing or wrong bearer token"}
    assert guarded.get("/health")[0] == 200  # a load balancer's probe needs no token


def test_wrong_paths_and_methods_are_one_line(guarded) -> None:
    assert raw(guarded.url + "/nope", None, token=TOKEN)[:2] == (404, {"error": "Not Found"})
    code, reply, _ = raw(guarded.url + "/health", b"{}", token=TOKEN)
    assert code == 405 and list(reply) == ["error"]


def test_a_flood_past_the_queue_gets_429_and_the_service_still_serves(guarded) -> None:
    done: list[tuple[int, dict, dict]] = []
    first = threading.Thread(target=lambda: done.append(post(guarded, {"items": [SLOW]})))
    first.start()
    _wait_running(guarded)  # the one slot (queue size 1) is taken
    flood = [post(guarded, {"items": [ECHO]}) for _ in range(10)]
    assert not done, "the slow request ended before the flood did: the test proves nothing"
    assert {code for code, _, _ in flood} == {429}
    assert all(int(h["retry-after"]) >= 1 for _, _, h in flood)
    assert all("queue is full" in reply["error"] for _, reply, _ in flood)
    # the client waits as told (Retry-After) and gets through once the slot frees
    client = cb.VerifierClient(guarded.url, token=TOKEN, retries=30)
    assert client.verify_items([ECHO])[0].verdict == "AC"
    first.join(timeout=120)
    assert done and done[0][0] == 200 and done[0][1]["results"][0]["verdict"] == "AC"


def _wait_running(svc: Service, token: str | None = TOKEN) -> None:
    for _ in range(2000):  # bounded: the request is admitted within moments
        _, health, _ = svc.get("/health", token)
        if health.get("running") == 1:
            return
    raise AssertionError("the slow request never started")


def test_a_json_body_a_loopback_host_and_a_bound_on_bodies_in_flight(guarded) -> None:
    # a form POST (no CORS preflight from a browser) is refused
    code, reply, _ = post(guarded, {"items": [ECHO]}, headers={"Content-Type": "text/plain"})
    assert code == 415 and reply == {"error": "the body must be application/json"}
    # a token-less server answers only loopback Host names (a DNS-rebinding page: 403)
    bare = Service("--workers", "1")
    try:
        code, reply, _ = raw(bare.url + "/health", None, headers={"Host": "evil.example:80"})
        assert code == 403 and "loopback" in reply["error"]
        assert raw(bare.url + "/health", None, headers={"Host": "localhost"})[0] == 200
    finally:
        bare.stop()
    # slow senders: at most 2 x queue size bodies are read at once, then 429 at once
    host, port = guarded.url.rsplit("/", 1)[1].split(":")
    slow = []
    for _ in range(2):
        s = socket.create_connection((host, int(port)), timeout=60)
        s.sendall(f"POST /verify HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}"
                  "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode())  # fmt: skip
        slow.append(s)
    try:
        for _ in range(2000):  # bounded: until the server is reading both bodies
            if "cppo_serve_receiving 2" in metrics_text(guarded):
                break
        else:
            raise AssertionError("the slow bodies were never being read")
        code, reply, headers = post(guarded, {"items": [ECHO]})
        assert code == 429 and "being received" in reply["error"] and headers["retry-after"]
    finally:
        for s in slow:
            s.close()
    for _ in range(2000):
        if "cppo_serve_receiving 0" in metrics_text(guarded):
            break
    assert post(guarded, {"items": [ECHO]})[0] == 200


def metrics_text(svc: Service) -> str:
    import urllib.request

    req = urllib.request.Request(svc.url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.read().decode()


def test_metrics_are_prometheus_text(guarded) -> None:
    assert post(guarded, {"items": [ECHO]})[0] == 200  # whatever ran before (or not)
    import urllib.request

    req = urllib.request.Request(guarded.url + "/metrics",
                                 headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=60) as resp:
        text = resp.read().decode()
        assert resp.headers["content-type"].startswith("text/plain")
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert float(samples['cppo_serve_verdicts_total{verdict="AC"}']) >= 1
    assert float(samples["cppo_serve_tests_total"]) >= 1
    assert float(samples["cppo_serve_tests_per_second"]) >= 0
    assert samples["cppo_serve_queue_depth"] == "0" and samples["cppo_serve_queue_capacity"] == "1"
    assert float(samples['cppo_serve_requests_total{code="200"}']) >= 1
    assert float(samples["cppo_serve_busy_seconds_total"]) > 0


def test_sigterm_drains_then_exits() -> None:
    svc = Service("--workers", "1")
    try:
        done: list = []
        client = cb.VerifierClient(svc.url, retries=0)
        worker = threading.Thread(target=lambda: done.append(client.verify_items([SLOW])))
        worker.start()
        _wait_running(svc, None)
        svc.terminate()
        code, reply, _ = post(svc, {"items": [ECHO]}, token=None)
        assert code == 503 and "draining" in reply["error"]
        worker.join(timeout=120)
        assert done and done[0][0].verdict == "AC"  # the admitted request finished
        assert svc.proc.wait(timeout=60) == 0
        with pytest.raises(VerifierServiceError):
            cb.VerifierClient(svc.url, retries=1, backoff_s=0.01).verify_items([ECHO])
    finally:
        svc.stop()


@pytest.mark.parametrize(("args", "says"), [
    (["--host", "0.0.0.0"], "refusing to bind 0.0.0.0"),
    (["--host", "example.com"], "refusing to bind example.com"),
    (["--host", "::"], "refusing to bind ::"),
    (["--workers", "1", "--lanes", "2"], "2 lanes need at least as many workers (have 1)"),
])  # fmt: skip
def test_no_public_bind_without_a_token(args, says) -> None:
    """(Nor more lanes than sandboxes: each lane runs at least one, so more than --workers.)"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "CPPO_SERVE_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "cppo_bench", "serve", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 1 and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_client_needs_no_fastapi() -> None:
    code = ("import sys; sys.modules['fastapi'] = None; sys.modules['uvicorn'] = None\n"
            "import cppo_bench as cb; c = cb.VerifierClient('http://127.0.0.1:9'); print('ok')")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    assert proc.stdout.strip() == "ok", proc.stderr
    # and the command, without the extra, says what to install in one line
    code = ("import sys; sys.modules['fastapi'] = None\n"
            "from cppo_bench.cli import main; main(['serve'])")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip() == "Error: serve needs fastapi: pip install 'cppo-bench[serve]'"
