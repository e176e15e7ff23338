"""`openai` backend: any OpenAI-compatible server (vllm serve, SGLang, llama.cpp server, ...).

Requests with `messages` go to /v1/chat/completions (the server applies the chat
template), requests with `prompt` to /v1/completions. Standard library HTTP only, a
thread pool for concurrency, retries with exponential backoff and jitter on 429, 5xx,
timeouts and connection errors. After the retries a transport failure raises
BackendError (the run stops and resumes later); a request the server rejects as
malformed (400/413/422, e.g. a prompt longer than the context) becomes one "error"
result, which the generation cache does not keep.
"""

from __future__ import annotations

import http.client
import json
import queue
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cppo_bench.backends.base import BackendError, GenRequest, GenResult, ProgressFn, ResultFn
from cppo_bench.backends.chat import plain_prompt
from cppo_bench.files import jsonio
from cppo_bench.util import env
from cppo_bench.util.termsafe import quote

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
REQUEST_ERROR_STATUS = frozenset({400, 413, 422})  # this request is bad, not the server
MAX_REPLY_BYTES = 512 << 20  # a reply past this is refused, never read whole into memory
FINISH = {"stop": "stop", "eos": "stop", "eos_token": "stop", "tool_calls": "stop"}
FINISH.update({"length": "length", "max_tokens": "length"})
ENDPOINTS = ("auto", "chat", "completions")


class _Retry(Exception):
    """A failure worth retrying; `wait` is the server's Retry-After, if it sent one."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class _Rejected(Exception):
    """The server refused this one request (4xx that retrying cannot fix)."""


def normalize_base_url(url: str) -> str:
    """`http://host:8000` and `http://host:8000/v1/` both mean `http://host:8000/v1`."""
    url = url.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BackendError(f"openai backend: base_url {quote(url)} is not an http(s) URL")
    return url if parts.path else url + "/v1"


def map_finish(reason: str | None) -> str:
    if reason is None:
        return "stop"
    return FINISH.get(reason, "error")


class OpenAIBackend:
    """Client of one OpenAI-compatible server. Build it with `make_openai_backend`."""

    name = "openai"

    def __init__(
        self,
        model: str | None,
        *,
        base_url: str,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 600.0,
        max_retries: int = 6,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        endpoint: str = "auto",
        tokenizer: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if endpoint not in ENDPOINTS:
            raise BackendError(f"openai backend: endpoint must be one of {', '.join(ENDPOINTS)}")
        self.base_url = normalize_base_url(base_url)
        self.api_key = api_key
        self.concurrency = max(1, int(concurrency))
        self.timeout, self.max_retries = float(timeout), max(0, int(max_retries))
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.endpoint, self.extra_body = endpoint, dict(extra_body or {})
        self._tokenizer_name: str | bool | None = tokenizer
        self._tokenizer: Any = None
        self.model_id = model or self._served_model()

    # -- public -------------------------------------------------------------------------
    streams_results = True  # generate(on_result=...) hands each result out as it arrives

    def generate(
        self,
        requests: Sequence[GenRequest],
        progress: ProgressFn | None = None,
        on_result: ResultFn | None = None,
    ) -> list[GenResult]:
        results: list[GenResult | None] = [None] * len(requests)
        # daemon threads, never joined: on Ctrl-C (or an error) generate returns at once and
        # the requests in flight are abandoned (their connections close with the process, so
        # the server stops them), instead of waiting tens of seconds for every one to finish
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(requests)):
            todo.put(i)
        finished: queue.SimpleQueue[tuple[int, GenResult | None, BaseException | None]]
        finished = queue.SimpleQueue()
        cancel = threading.Event()

        def work() -> None:
            while not cancel.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    finished.put((i, self._one(requests[i]), None))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                    finished.put((i, None, exc))

        for _ in range(min(self.concurrency, len(requests))):
            threading.Thread(target=work, daemon=True, name="openai-request").start()
        try:
            for _ in range(len(requests)):
                i, result, error = finished.get()
                if error is not None:
                    raise error  # a BackendError stops the whole call
                results[i] = result
                if on_result:
                    on_result(i, result)  # type: ignore[arg-type]
                if progress:
                    progress(1)
        finally:
            cancel.set()  # queued requests are never sent
        return [r for r in results if r is not None]

    def close(self) -> None:
        self._tokenizer = None

    # -- one request --------------------------------------------------------------------
    def payload(self, req: GenRequest) -> tuple[str, dict[str, Any]]:
        """(path, JSON body) of one request."""
        p = req.params
        body: dict[str, Any] = {
            "model": self.model_id,
            "temperature": p.temperature,
            "top_p": p.top_p,
            "max_tokens": p.max_tokens,
            "seed": p.seed,
            "n": 1,
        }
        if p.stop:
            body["stop"] = list(p.stop)
        use_chat = req.messages is not None and self.endpoint != "completions"
        if self.endpoint == "chat" and req.messages is None:
            raise BackendError("openai backend: endpoint=chat cannot send a plain prompt")
        if use_chat:
            assert req.messages is not None
            body["messages"] = [dict(m) for m in req.messages]
            path = "/chat/completions"
        else:
            # (a GenRequest holds exactly one of the two)
            body["prompt"] = (
                req.prompt if req.prompt is not None else plain_prompt(req.messages or ())
            )
            path = "/completions"
        body.update(self.extra_body)
        return path, body

    def _one(self, req: GenRequest) -> GenResult:
        path, body = self.payload(req)
        try:
            data = self._post(path, body)
        except _Rejected as exc:
            return GenResult(
                text="", num_tokens=0, finish_reason="error", extra={"error": str(exc)}
            )
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] if "messages" in body else choice["text"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(
                f"openai backend: unexpected response from {self.base_url}{path}: "
                f"{json.dumps(data)[:200]}"
            ) from None
        text = text or ""
        usage = data.get("usage") or {}
        extra: dict[str, Any] = {}
        num = usage.get("completion_tokens")
        if not isinstance(num, int):
            num, how = self._count_tokens(text)
            extra["num_tokens_from"] = how
        finish = map_finish(choice.get("finish_reason"))
        if finish == "error":
            extra["error"] = f"finish_reason {quote(choice.get('finish_reason'))}"
        return GenResult(
            text=text,
            num_tokens=int(num),
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            extra=extra,
        )

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._with_retries(lambda: self._http("POST", path, body), f"POST {path}")

    def _with_retries(self, call: Any, what: str) -> Any:
        attempt = 0
        while True:
            try:
                return call()
            except _Retry as exc:
                if attempt >= self.max_retries:
                    raise BackendError(
                        f"openai backend: {what} at {self.base_url} failed after "
                        f"{attempt + 1} tries: {exc}"
                    ) from None
                time.sleep(self.delay(attempt, exc.wait))
                attempt += 1

    def delay(self, attempt: int, server_wait: float | None = None) -> float:
        """Exponential backoff with jitter (half fixed, half random), or the server's wish."""
        if server_wait is not None:
            return min(self.max_backoff, max(0.0, server_wait))
        cap = min(self.max_backoff, self.backoff * (2**attempt))
        return cap / 2 + random.uniform(0, cap / 2)

    def _http(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base_url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                reply = resp.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = _error_text(exc)
            if exc.code in RETRY_STATUS:
                raise _Retry(f"HTTP {exc.code}: {detail}", _retry_after(exc)) from None
            if exc.code in REQUEST_ERROR_STATUS:
                raise _Rejected(f"HTTP {exc.code}: {detail}") from None
            raise BackendError(
                f"openai backend: {method} {self.base_url}{path}: HTTP {exc.code}: {detail}"
            ) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Retry(f"{type(reason).__name__}: {reason}") from None
        if len(reply) > MAX_REPLY_BYTES:
            raise BackendError(
                f"openai backend: {method} {self.base_url}{path}: the reply is over "
                f"{MAX_REPLY_BYTES >> 20} MiB"
            )
        try:
            # the one JSON reader: a reply nested past its depth, not UTF-8, or with a key
            # given twice is one line, as a reply that is not JSON at all
            return jsonio.loads(reply)
        except ValueError as exc:
            raise _Retry(f"response is not JSON ({exc})") from None

    # -- helpers ------------------------------------------------------------------------
    def _served_model(self) -> str:
        """The model the server serves, for a run without --model (first of /v1/models)."""
        data = self._with_retries(lambda: self._http("GET", "/models", None), "GET /models")
        try:
            return str(data["data"][0]["id"])
        except (KeyError, IndexError, TypeError):
            raise BackendError(
                f"openai backend: {self.base_url}/models lists no model; pass --model"
            ) from None

    def _count_tokens(self, text: str) -> tuple[int, str]:
        """Fallback when the server reports no usage: the `tokenizer` option (may download),
        else the served model's tokenizer if the model id is a local folder, else ~4 bytes
        per token."""
        name = self._tokenizer_name
        if name is None and Path(self.model_id).is_dir():
            name = self.model_id
        if self._tokenizer is None and name:
            try:
                from transformers import AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(name)
            except Exception:  # noqa: BLE001 - any failure means "estimate instead"
                self._tokenizer_name = False  # do not try again for every request
        if self._tokenizer is not None:
            return len(self._tokenizer(text, add_special_tokens=False)["input_ids"]), "tokenizer"
        return max(1, len(text.encode()) // 4) if text else 0, "estimate"


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read(64 << 10).decode("utf-8", "replace")  # an error page: its head says why
    except OSError:
        return str(exc.reason)
    try:
        err = jsonio.loads(raw).get("error", raw)
        raw = err.get("message", err) if isinstance(err, dict) else err
    except (ValueError, AttributeError):
        pass
    return " ".join(str(raw).split())[:300]


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def make_openai_backend(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    concurrency: int = 8,
    timeout: float = 600.0,
    max_retries: int = 6,
    backoff: float = 0.5,
    endpoint: str = "auto",
    tokenizer: str | None = None,
    extra_body: dict[str, Any] | None = None,
    batch_size: int | None = None,
) -> OpenAIBackend:
    """The `openai` backend. `model`: the served model name (default: the first the server
    lists). Options: base_url (default $OPENAI_BASE_URL, else http://127.0.0.1:8000/v1),
    api_key (default $OPENAI_API_KEY), concurrency (requests in flight), timeout (seconds per
    request), max_retries, backoff (first retry delay, doubling), endpoint (auto|chat|
    completions: `completions` sends messages as a plain prompt, for base models), tokenizer
    (counts tokens when the server reports no usage), extra_body (merged into every request,
    e.g. {"top_k": 20}). batch_size is accepted as an alias of concurrency."""
    url = base_url or env.text("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    return OpenAIBackend(
        model,
        base_url=url,
        api_key=api_key if api_key is not None else env.raw("OPENAI_API_KEY"),
        concurrency=batch_size or concurrency,
        timeout=timeout,
        max_retries=max_retries,
        backoff=backoff,
        endpoint=endpoint,
        tokenizer=tokenizer,
        extra_body=extra_body,
    )
