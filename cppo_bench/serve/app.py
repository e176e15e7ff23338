"""The ASGI app (FastAPI): `POST /verify`, `GET /health`, `GET /metrics`.

Every refusal is one JSON line ``{"error": "..."}`` with its status: 400 malformed JSON, 401
a missing or wrong token, 404/405 a wrong path or method, 413 over a size cap, 422 a body of
the wrong shape, 429 the queue full (with Retry-After), 503 draining. The body is read here,
under its cap, and parsed by the schema (serve.pipeline): FastAPI's own body handling (and
its multi-line validation reports) is never reached."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from cppo_bench.serve.adapters.openrlhf import add_routes
from cppo_bench.serve.config import is_loopback
from cppo_bench.serve.pipeline import JSONResponse, ServeState, error, judge
from cppo_bench.serve.schema import VerifyRequest


def _host_is_loopback(host: str) -> bool:
    name = host.rsplit("]", 1)[0].lstrip("[") if host.startswith("[") else host.split(":")[0]
    return is_loopback(name)


def _refusal(request: Request, state: ServeState) -> Response | None:
    """The one door every request passes, in order: the Host (a token-less server answers
    only loopback names: a web page that rebinds its DNS name to 127.0.0.1 gets nothing),
    the token (every path but /health), a JSON body (a browser's form POST, which needs no
    CORS preflight, is refused), the drain."""
    if state.config.token is None and not _host_is_loopback(request.headers.get("host", "")):
        return error(403, "Host is not a loopback name (this server has no token)")
    if request.url.path == "/health":
        return None
    if state.config.token is not None:
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {state.config.token}".encode()):
            return error(401, "missing or wrong bearer token")
    if request.method == "POST":
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return error(415, "the body must be application/json")
        if state.draining:
            return error(503, "draining: not taking new requests", {"Retry-After": "5"})
    return None


def create_app(state: ServeState) -> FastAPI:
    app = FastAPI(title="cppo-bench verifier", docs_url=None, redoc_url=None, openapi_url=None,
                  default_response_class=JSONResponse)  # fmt: skip
    app.state.serve = state

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        refused = _refusal(request, state)
        if refused is not None:
            state.metrics.request(refused.status_code)
            return refused
        response = await call_next(request)
        state.metrics.request(response.status_code)
        return response

    @app.exception_handler(StarletteHTTPException)
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
                "bench": state.bench, "problems": len(state.problems),
                "sandboxes": state.config.lane_workers() * state.config.lanes}  # fmt: skip
        return JSONResponse(body, 503 if state.draining else 200)

    @app.get("/metrics")
    async def metrics() -> Response:
        text = state.metrics.render(state.queue.waiting, state.queue.running,
                                    state.config.queue_size, state.draining,
                                    state.reading)  # fmt: skip
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    @app.post("/verify")
    async def verify(request: Request) -> Response:
        outcome = await judge(state, request, VerifyRequest.model_validate)
        if isinstance(outcome, Response):
            return outcome
        return JSONResponse({"results": [r.to_dict() for r in outcome]})

    add_routes(app, state)  # POST /get_reward: OpenRLHF's remote reward protocol
    return app
