"""The one path of every verifying endpoint (`/verify`, OpenRLHF's `/get_reward`): the body
read under its cap, strict JSON, the endpoint's parse to the schema, the jobs capped
(serve.jobs), a queue slot or 429, then the verdicts. Each refusal is one JSON line
``{"error": "..."}`` with its status."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse as _StarletteJSON
from fastapi.responses import Response
from pydantic import ValidationError

from cppo_bench.files import jsonio
from cppo_bench.problem import Problem
from cppo_bench.serve.config import ServeConfig
from cppo_bench.serve.jobs import RequestError, to_jobs
from cppo_bench.serve.metrics import Metrics
from cppo_bench.serve.queue import BatchQueue, QueueFull
from cppo_bench.serve.schema import VerifyRequest
from cppo_bench.verifier import VerifyResult


@dataclass
class ServeState:
    """What one server holds for its lifetime: settings, the problems it loaded, the queue."""

    config: ServeConfig
    problems: dict[str, Problem] = field(default_factory=dict)
    bench: str | None = None
    metrics: Metrics = field(default_factory=Metrics)
    draining: bool = False
    reading: int = 0  # request bodies being read now (the event loop's own count)
    queue: BatchQueue = field(init=False)

    def __post_init__(self) -> None:
        self.queue = BatchQueue(self.config, self.metrics)


class JSONResponse(_StarletteJSON):
    """Every JSON reply of the service, ASCII: a program or a test may hold a lone surrogate
    (a valid JSON escape, `\\ud800`, which the verifier judges in-process like any text); as
    an escape it travels back, where UTF-8 could not encode it (a 500 before)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False,
                          separators=(",", ":")).encode("ascii")  # fmt: skip


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status, headers=headers)


def _validation_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


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


async def judge(state: ServeState, request: Request,
                parse: Callable[[Any], VerifyRequest]) -> list[VerifyResult] | Response:  # fmt: skip
    """The one path of every verifying endpoint: body under its cap, strict JSON, `parse`
    to the schema (a pydantic ValidationError or ValueError: 422), jobs capped (serve.jobs),
    a queue slot or 429, then the verdicts; a refusal comes back as its one-line Response."""
    # bodies are read before a queue slot is taken: bound how many at once, or a crowd of
    # slow senders of capped bodies holds crowd x cap bytes of memory
    if state.reading >= 2 * state.config.queue_size:
        return error(429, "too many requests being received; retry shortly", {"Retry-After": "1"})
    state.reading += 1
    try:
        body = await _read_body(request, state.config.max_body_bytes)
        try:
            # NaN / Infinity are not JSON: refused here, never reaching a limit or a test
            raw = jsonio.loads(body, constants=False)
        except ValueError as exc:
            raise RequestError(
                400, f"body is not valid JSON ({getattr(exc, 'msg', exc)})"
            ) from None
        try:
            parsed = parse(raw)
        except ValidationError as exc:
            raise RequestError(422, _validation_line(exc)) from None
        except ValueError as exc:
            raise RequestError(422, str(exc)) from None
        jobs, limits = to_jobs(parsed, state.config, state.problems, state.bench)
    except RequestError as exc:
        return error(exc.status, exc.message)
    finally:
        state.reading -= 1
    try:
        state.queue.admit()
    except QueueFull as exc:
        return error(429, str(exc), {"Retry-After": str(exc.retry_after)})
    try:
        return await state.queue.run(jobs, limits)
    finally:
        state.queue.release()
