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
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from cppo_bench.serve.adapters.openrlhf import add_routes
from cppo_bench.serve.pipeline import ServeState, error, judge
from cppo_bench.serve.schema import VerifyRequest


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
            if state.draining and request.method == "POST":
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
        outcome = await judge(state, request, VerifyRequest.model_validate)
        if isinstance(outcome, Response):
            return outcome
        return JSONResponse({"results": [r.to_dict() for r in outcome]})

    add_routes(app, state)  # POST /get_reward: OpenRLHF's remote reward protocol
    return app
