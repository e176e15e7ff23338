"""Running the app under uvicorn: bind (port 0: any free port), print one ready line naming
the address, and on SIGTERM drain: new requests get 503 while the admitted ones finish, then
the server stops (SIGINT twice, or the drain timeout, stops it at once)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from types import FrameType

import uvicorn

from cppo_bench.errors import DataError
from cppo_bench.serve.app import create_app
from cppo_bench.serve.pipeline import ServeState
from cppo_bench.util.termsafe import echo, quote
from cppo_bench.verifier import keep_sandboxes

READY = "cppo-bench serve: ready on "  # the line a supervisor (or a test) waits for


class _DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, state: ServeState,
                 on_ready: Callable[[str], None]) -> None:  # fmt: skip
        super().__init__(config)
        self.serve_state = state
        self.on_ready = on_ready
        self.address = ""
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self._loop = asyncio.get_running_loop()
        if self.started and sockets:
            host, port = sockets[0].getsockname()[:2]
            self.address = f"{self.serve_state.config.scheme}://{host}:{port}"
            self.on_ready(self.address)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        state = self.serve_state
        if sig == signal.SIGTERM and not state.draining and self._loop is not None:
            state.draining = True  # from now on /verify answers 503
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._drain()))
            return
        super().handle_exit(sig, frame)

    async def _drain(self) -> None:
        try:
            await asyncio.wait_for(self.serve_state.queue.idle(),
                                   self.serve_state.config.drain_timeout_s)  # fmt: skip
        except asyncio.TimeoutError:
            pass
        self.should_exit = True


def _announce(address: str) -> None:
    echo(READY + address)  # click's echo flushes: the node's ranks wait on this line


def _check_tls(certfile: str, keyfile: str | None) -> None:
    """Load the pair as uvicorn will, before anything binds: a bad file is one line here,
    not a traceback from inside the server's start-up."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        why = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or exc
        raise DataError(f"serve: cannot load the TLS certificate {quote(certfile)} and key "
                        f"{quote(str(keyfile))} ({why})") from None  # fmt: skip


def serve(state: ServeState, on_ready: Callable[[str], None] = _announce,
          log_level: str = "warning") -> None:  # fmt: skip
    """Serve until stopped; the config was checked (token, loopback) when it was built."""
    config = state.config
    if config.ssl_certfile:
        _check_tls(config.ssl_certfile, config.ssl_keyfile)
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host, config.port))
    except OSError as exc:
        sock.close()
        raise OSError(f"serve: cannot bind {config.host}:{config.port} ({exc.strerror})") from None
    sock.listen(128)
    uv = uvicorn.Config(create_app(state), log_level=log_level, access_log=False,
                        timeout_graceful_shutdown=int(config.drain_timeout_s), lifespan="off",
                        ssl_certfile=config.ssl_certfile, ssl_keyfile=config.ssl_keyfile)  # fmt: skip
    server = _DrainingServer(uv, state, on_ready)
    keep = keep_sandboxes() if config.reuse_sandboxes else contextlib.nullcontext()
    try:
        with keep:
            server.run(sockets=[sock])
    finally:
        state.queue.close()
        sock.close()
        sys.stdout.flush()
