"""A real `python -m cppo_bench serve` in a fresh process, on a free loopback port: started
as a user starts it, ready when it prints its ready line (waited on, never slept on)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = "cppo-bench serve: ready on "  # cppo_bench.serve.server.READY
START_S = 120  # a busy 2-core box imports FastAPI slowly; a hang still fails


class Service:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cppo_bench", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.url = self._wait_ready()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def _wait_ready(self) -> str:
        while True:
            try:
                line = self.lines.get(timeout=START_S)
            except queue.Empty:
                self.stop()
                raise RuntimeError("serve printed no ready line") from None
            if line is None:
                self.proc.wait(timeout=30)
                raise RuntimeError(f"serve exited {self.proc.returncode}: {''.join(self.stderr)}")
            if line.startswith(READY):
                return line[len(READY) :].strip()

    def get(self, path: str, token: str | None = None) -> tuple[int, dict, dict]:
        return raw(self.url + path, None, token=token)

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)


def raw(url: str, body: bytes | None, token: str | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, dict, dict]:  # fmt: skip
    """(status, parsed JSON body, headers) of one request, errors included, never retried."""
    h = {"Content-Type": "application/json", **(headers or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET",
                                 headers=h)  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        text = exc.read().decode()
        assert text.count("\n") <= 1, text  # one line, never a traceback
        return exc.code, json.loads(text), dict(exc.headers)
