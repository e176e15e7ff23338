"""`cb.VerifierClient`: verify programs on a `cppo-bench serve` service (stdlib only: the
client side needs no extra install).

    client = cb.VerifierClient("http://127.0.0.1:8600", token=None, timeout=300)
    verdicts = client.verify(problems, programs)        # cb.Verdict per program, in order

Several URLs: each request goes to the next (round robin) and a refused or unreachable one
is retried on the others. 429 and 503 are retried after the server's Retry-After; so are
connection errors (a fixed backoff), up to `retries` times; anything else raises
VerifierServiceError with the server's one-line reason."""

from __future__ import annotations

import itertools
import json
import math
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from cppo_bench.errors import UserError
from cppo_bench.files import jsonio
from cppo_bench.problem import Problem
from cppo_bench.serve.config import env_token
from cppo_bench.verifier.records import VerifyResult

RETRIED = (429, 503)
MAX_WAIT_S = 60.0  # a Retry-After past this is capped (a hostile or broken header)
MAX_REPLY_BYTES = 512 << 20  # a reply past this is refused, never read whole into memory


class VerifierServiceError(UserError, RuntimeError):
    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(f"verifier service: {message}" + (f" (HTTP {status})" if status else ""))
        self.status = status


def problem_payload(problem: Problem) -> dict[str, Any]:
    """The inline form of a problem (schema.ProblemSpec)."""
    return {"tests": [{"input": t.input, "output": t.output, "mode": t.mode,
                       "fn_name": t.fn_name} for t in problem.tests],
            "checker": problem.checker, "problem_id": problem.problem_id,
            "time_limit_s": problem.time_limit_s, "memory_limit_mb": problem.memory_limit_mb}  # fmt: skip


class VerifierClient:
    def __init__(self, urls: str | Sequence[str], *, token: str | None = None,
                 timeout: float = 600.0, retries: int = 8, backoff_s: float = 0.5,
                 batch: int = 256, max_wait_s: float = MAX_WAIT_S,
                 max_reply_bytes: int = MAX_REPLY_BYTES) -> None:  # fmt: skip
        listed = [urls] if isinstance(urls, str) else list(urls)
        self.urls = [u.strip().rstrip("/") for u in listed for u in u.split(",") if u.strip()]
        if not self.urls:
            raise ValueError("VerifierClient: no URL given")
        self.token = token if token is not None else env_token()
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.batch = max(1, batch)  # programs per request (the server's --max-programs)
        self.max_wait_s = max_wait_s
        self.max_reply_bytes = max_reply_bytes
        self._next = itertools.cycle(range(len(self.urls)))
        self._lock = threading.Lock()

    def _pick(self) -> str:
        with self._lock:
            return self.urls[next(self._next)]

    def _call(
        self, url: str, method: str, path: str, body: bytes | None
    ) -> tuple[int, bytes, float | None]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, self._read(resp), None
        except urllib.error.HTTPError as exc:
            wait = _retry_after(exc.headers.get("Retry-After"), self.max_wait_s)
            return exc.code, self._read(exc), wait

    def _read(self, resp: Any) -> bytes:
        data = resp.read(self.max_reply_bytes + 1)
        if len(data) > self.max_reply_bytes:
            raise VerifierServiceError(None, f"reply over {self.max_reply_bytes} bytes")
        return bytes(data)

    def request(self, method: str, path: str, payload: Any = None) -> Any:
        """One JSON call, retried on 429/503 and connection errors; the parsed reply."""
        body = None if payload is None else json.dumps(payload).encode()
        last = "no attempt"
        for attempt in range(self.retries + 1):
            url = self._pick()
            try:
                status, data, wait = self._call(url, method, path, body)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                last = f"{url}: {getattr(exc, 'reason', exc)}"
                if isinstance(getattr(exc, "reason", exc), ssl.SSLCertVerificationError):
                    # not transient: an https server this client does not trust (a private
                    # CA: SSL_CERT_FILE names its certificate)
                    raise VerifierServiceError(None, last) from None
                wait = self.backoff_s * (attempt + 1)
            else:
                if status < 400:
                    try:
                        return jsonio.loads(data)
                    except ValueError:
                        raise VerifierServiceError(
                            status, f"{url}: the reply is not JSON"
                        ) from None
                last = _reason(data) or f"HTTP {status}"
                if status not in RETRIED:
                    raise VerifierServiceError(status, last)
                wait = wait if wait is not None else self.backoff_s
            if attempt < self.retries:
                time.sleep(wait)  # what the server asked (Retry-After), capped
        raise VerifierServiceError(None, f"gave up after {self.retries + 1} attempts: {last}")

    def verify_items(self, items: list[dict[str, Any]],
                     limits: dict[str, Any] | None = None) -> list[VerifyResult]:  # fmt: skip
        """Raw schema items (tests inline, or a benchmark problem id the server loaded). Sent
        in requests of at most `batch` programs, one per URL at a time, so several servers
        verify one call's programs in parallel; the verdicts come back in the items' order."""
        if not items:
            return []
        per = min(self.batch, math.ceil(len(items) / len(self.urls)))
        chunks = [items[s : s + per] for s in range(0, len(items), per)]
        if len(chunks) == 1:
            return self._verify_chunk(chunks[0], limits)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(self.urls), len(chunks))) as pool:
            parts = list(pool.map(lambda c: self._verify_chunk(c, limits), chunks))
        return [r for part in parts for r in part]

    def _verify_chunk(self, items: list[dict[str, Any]],
                      limits: dict[str, Any] | None) -> list[VerifyResult]:  # fmt: skip
        payload: dict[str, Any] = {"items": items}
        if limits:
            payload["limits"] = limits
        reply = self.request("POST", "/verify", payload)
        try:
            results = [VerifyResult.from_dict(r) for r in reply["results"]]
        except (KeyError, TypeError, AttributeError):  # a server that is not cppo-bench serve
            raise VerifierServiceError(None, "the reply holds no list of verdicts") from None
        if len(results) != len(items):  # never a silently shorter list
            raise VerifierServiceError(None, f"{len(results)} results for {len(items)} programs")
        return results

    def verify(self, problems: Sequence[Problem], programs: Sequence[str], *,
               all_tests: bool = True, **limits: Any) -> list[VerifyResult]:  # fmt: skip
        """Verdicts of programs[i] on problems[i], as `cb.verify` gives them in-process with
        every test run: the service has no early stop (SECURITY.md), so `all_tests` is
        only ever True, and says so at the call."""
        if not all_tests:
            raise ValueError("VerifierClient.verify: the service runs every test (all_tests)")
        if len(problems) != len(programs):
            raise ValueError(f"{len(problems)} problems but {len(programs)} programs")
        items = [{"code": code, "problem": problem_payload(p)}
                 for p, code in zip(problems, programs, strict=True)]  # fmt: skip
        return self.verify_items(items, limits or None)

    def health(self) -> dict[str, Any]:
        return dict(self.request("GET", "/health"))


def _retry_after(value: str | None, cap: float = MAX_WAIT_S) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or not math.isfinite(seconds):  # "nan", "inf": the default backoff
        return None
    return min(max(seconds, 0.0), cap)


def _reason(data: bytes) -> str:
    try:
        reply = jsonio.loads(data)
    except ValueError:
        return ""
    return " ".join(str(reply.get("error", "")).split()) if isinstance(reply, dict) else ""
