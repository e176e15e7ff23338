"""The ASGI app (FastAPI): `POST /verify`, `GET /health`, `GET /metrics`.

Every refusal is one JSON line ``{"error": "..."}`` with its status: 400 malformed JSON, 401
a missing or wrong token, 404/405 a wrong path or method, 413 over a size cap, 422 a body of
the wrong shape, 429 the queue full (with Retry-After), 503 draining. The body is read here,
under its cap, and parsed by the schema: FastAPI's own body handling (and its multi-line
validation reports) is never reached."""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from cppo_bench.problem import Problem
from cppo_bench.serve.config import ServeConfig
from cppo_bench.serve.jobs import RequestError, to_jobs
from cppo_bench.serve.metrics import Metrics
from cppo_bench.serve.queue import BatchQueue, QueueFull
from cppo_bench.serve.schema import VerifyRequest


@dataclass
class ServeState:
    """What one server holds for its lifetime: settings, the problems it loaded, the queue."""

    config: ServeConfig
    problems: dict[str, Problem] = field(default_factory=dict)
    bench: str | None = None
    metrics: Metrics = field(default_factory=Metrics)
    draining: bool = False
    queue: BatchQueue = field(init=False)

    def __post_init__(self) -> None:
        self.queue = BatchQueue(self.config, self.metrics)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status, headers=headers)


def _validation_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def _no_constant(name: str) -> Any:
    # NaN / Infinity are not JSON (RFC 8259): refused here, never reaching a limit or a test
    raise ValueError(f"{name} is not JSON")


DRAIN_BYTES = 64 << 20  # an oversize body is read and dropped up to this, then cut off


async def _read_body(request: Request, cap: int) -> bytes:
    """The body, at most `cap` bytes. One over the cap is still read to its end (dropped, up to
    DRAIN_BYTES more) so the client, still sending, gets the 413 instead of a broken pipe."""
    declared = request.headers.get("content-length")
    if declared is not None and not declared.isdigit():
        raise RequestError(400, "Content-Length is not a number")
    body = bytearray()
    seen = 0
    async for chunk in request.stream():  # a lying or absent Content-Length: counted here
        seen += len(chunk)
        if seen <= cap:
            body += chunk
        elif seen > cap + DRAIN_BYTES:
            break
    if seen > cap:
        raise RequestError(413, f"body over the cap of {cap} bytes")
    return bytes(body)


def create_app(state: ServeState) -> FastAPI:
    app = FastAPI(title="cppo-bench verifier", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.serve = state
    token = state.config.token

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        # the one door: token, then drain, for every path but /health
        if request.url.path != "/health":
            if token is not None:
                given = request.headers.get("authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                    response: Response = error(401, "missing or wrong bearer token")
                    state.metrics.request(401)
                    return response
            if state.draining and request.url.path == "/verify":
                state.metrics.request(503)
                return error(503, "draining: not taking new requests", {"Retry-After": "5"})
        response = await call_next(request)
        state.metrics.request(response.status_code)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        # a bug, not the caller's fault: still one line, the traceback stays in the log
        return error(500, f"internal error ({type(exc).__name__})")

    @app.get("/health")
    async def health() -> Response:
        body = {"status": "draining" if state.draining else "ok",
                "queue": state.queue.waiting, "running": state.queue.running,
                "bench": state.bench, "problems": len(state.problems)}  # fmt: skip
        return JSONResponse(body, 503 if state.draining else 200)

    @app.get("/metrics")
    async def metrics() -> Response:
        text = state.metrics.render(state.queue.waiting, state.queue.running,
                                    state.config.queue_size, state.draining)  # fmt: skip
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    @app.post("/verify")
    async def verify(request: Request) -> Response:
        try:
            body = await _read_body(request, state.config.max_body_bytes)
            try:
                raw = json.loads(body, parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                raise RequestError(
                    400, f"body is not valid JSON ({getattr(exc, 'msg', exc)})"
                ) from None
            try:
                parsed = VerifyRequest.model_validate(raw)
            except ValidationError as exc:
                raise RequestError(422, _validation_line(exc)) from None
            jobs, limits = to_jobs(parsed, state.config, state.problems, state.bench)
        except RequestError as exc:
            return error(exc.status, exc.message)
        try:
            state.queue.admit()
        except QueueFull as exc:
            return error(429, str(exc), {"Retry-After": str(exc.retry_after)})
        try:
            results = await state.queue.run(jobs, limits)
        finally:
            state.queue.release()
        return JSONResponse({"results": [r.to_dict() for r in results]})

    return app
