"""`cb.VerifierClient` against a scripted stand-in server (stdlib, loopback): it waits what
Retry-After says (capped, whatever the header holds), gives up after its retries in one
line, does not retry a refusal, and never trusts a reply it cannot read."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator

import pytest

import cppo_bench as cb
from cppo_bench.serve.client import VerifierServiceError

RESULT = {"verdict": "AC", "passed": True, "tests_passed": 1, "tests_total": 1,
          "first_failed": None, "time_s": 0.0, "peak_memory_mb": None, "detail": "",
          "code": "print(1)"}  # fmt: skip
ITEM = {"code": "print(1)", "problem": {"tests": [{"input": "", "output": "1\n"}]}}


class Scripted:
    """Answers each POST with the next (status, headers, body) of its script."""

    def __init__(self, script: list[tuple[int, dict[str, str], bytes]]) -> None:
        self.script = list(script)
        self.times: list[float] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.times.append(time.monotonic())
                status, headers, body = outer.script.pop(0)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted() -> Iterator:
    servers: list[Scripted] = []

    def make(*script: tuple[int, dict[str, str], bytes]) -> Scripted:
        servers.append(Scripted(list(script)))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


Reply = tuple[int, dict[str, str], bytes]  # (status, headers, body)
FULL: Reply = (429, {"Retry-After": "0.3"}, b'{"error": "the queue is full; retry in 1 s"}')
OK: Reply = (200, {}, json.dumps({"results": [RESULT]}).encode())


def test_retry_after_is_honoured_then_the_verdicts_come(scripted) -> None:
    server = scripted(FULL, FULL, OK)
    got = cb.VerifierClient(server.url, retries=5).verify_items([ITEM])
    assert [r.verdict for r in got] == ["AC"]
    gaps = [b - a for a, b in zip(server.times, server.times[1:], strict=False)]
    assert len(gaps) == 2 and all(g >= 0.3 for g in gaps), gaps  # waited as told


@pytest.mark.parametrize("header", ["1e9", "nan", "inf", "-5", "soon"])
def test_a_hostile_retry_after_is_capped(scripted, header) -> None:
    server = scripted((503, {"Retry-After": header}, b'{"error": "draining"}'), OK)
    started = time.monotonic()
    client = cb.VerifierClient(server.url, retries=2, backoff_s=0.01, max_wait_s=0.2)
    assert client.verify_items([ITEM])[0].passed
    assert time.monotonic() - started < 30


def test_it_gives_up_in_one_line_and_does_not_retry_a_refusal(scripted) -> None:
    server = scripted(FULL, FULL, FULL)
    with pytest.raises(VerifierServiceError) as err:
        cb.VerifierClient(server.url, retries=2, max_wait_s=0.01).verify_items([ITEM])
    assert "gave up after 3 attempts: the queue is full" in str(err.value)
    assert "\n" not in str(err.value)
    refused = scripted((413, {}, b'{"error": "body over the cap"}'), OK)
    with pytest.raises(VerifierServiceError, match="body over the cap") as err:
        cb.VerifierClient(refused.url, retries=5).verify_items([ITEM])
    assert err.value.status == 413 and len(refused.times) == 1


@pytest.mark.parametrize("body", [b"<html>", b'{"results": 3}', b'{"results": [{"x": 1}]}',
                                  b"[]", json.dumps({"results": [RESULT, RESULT]}).encode()])  # fmt: skip
def test_a_reply_it_cannot_read_is_one_error(scripted, body) -> None:
    server = scripted((200, {}, body))
    with pytest.raises(VerifierServiceError) as err:
        cb.VerifierClient(server.url, retries=0).verify_items([ITEM])
    assert "\n" not in str(err.value)


def test_an_oversize_reply_is_refused(scripted) -> None:
    server = scripted((200, {}, b'{"results": []}' + b" " * 5000))
    with pytest.raises(VerifierServiceError, match="reply over 1000 bytes"):
        cb.VerifierClient(server.url, retries=0, max_reply_bytes=1000).verify_items([ITEM])


def test_an_unreachable_server_is_one_line(scripted) -> None:
    with pytest.raises(VerifierServiceError, match="gave up after 2 attempts"):
        cb.VerifierClient("http://127.0.0.1:9", retries=1, backoff_s=0.01).verify_items([ITEM])


def test_retry_after_follows_the_recent_batches_only(monkeypatch) -> None:
    """Retry-After is the queue ahead at the mean batch time of the last minute: a slow spell
    an hour ago does not keep telling clients to wait."""
    from cppo_bench.serve import metrics as metrics_module
    from cppo_bench.verifier import VerifyResult

    clock = [1000.0]
    monkeypatch.setattr(metrics_module.time, "monotonic", lambda: clock[0])
    m = metrics_module.Metrics()
    one = [VerifyResult("AC", True, 2, 2, None, 0.1, None, "", "x")]
    m.batch(one, 30.0)  # a slow batch
    assert m.seconds_per_batch() == 30.0
    clock[0] += 3600
    m.batch(one, 2.0)
    m.batch(one, 4.0)
    assert m.seconds_per_batch() == 3.0  # the old one forgotten
    assert m.tests_per_second() == 4 / metrics_module.WINDOW_S
    clock[0] += 3600
    assert m.seconds_per_batch() == 1.0  # none in the window
