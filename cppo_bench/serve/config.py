"""The service's settings: where it listens, who may call it, and how much one request and the
queue may hold. One dataclass checked once, at start-up, before anything binds."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from cppo_bench.errors import DataError
from cppo_bench.util import env

TOKEN_ENV = "CPPO_SERVE_TOKEN"  # the token a client and the server read when none is given


def env_token() -> str | None:
    """THE reader of $CPPO_SERVE_TOKEN: the server (`cppo-bench serve` without
    --token-file), `cb.VerifierClient` and through it every adapter and trainer reward."""
    return env.text(TOKEN_ENV)


def is_loopback(host: str) -> bool:
    """Only a literal loopback address or `localhost` counts: a name that resolves elsewhere
    (or a wildcard such as 0.0.0.0) is a public binding and needs a token."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8600
    token: str | None = None
    workers: int | None = None  # sandboxes in total (default: one per core)
    lanes: int = 1  # batches verified at once; the workers are split among them
    queue_size: int = 8  # requests waiting or running; past this: 429
    max_body_bytes: int = 32 << 20
    max_programs: int = 256  # per request
    max_tests: int = 512  # per program
    max_time_s: float = 30.0  # the largest per-test CPU limit a request (or a problem) may ask
    max_memory_mb: int = 2048
    max_output_mb: int = 16  # the output cap per test: a request may ask less, never more
    drain_timeout_s: float = 600.0  # SIGTERM: how long in-flight batches may still run
    # keep idle sandboxes between requests (verifier.keep_sandboxes, as the trainers do
    # between steps): each program's first test forks from the pristine zygote in a wiped
    # scratch, a kept child is reset after each test (verifier/inside/reset.py), so the same
    # isolation as two programs of one request. The default: starting each request's
    # sandboxes cost 0.28-0.30x of in-process throughput at 8 programs a request, reuse
    # 0.79-1.03x (benchmarks/serve_throughput.py, docs/serve.md). Off (--fresh-sandboxes):
    # each request starts and closes its own, so no process outlives a request.
    reuse_sandboxes: bool = True
    # TLS by uvicorn (both or neither): the token then travels encrypted off the host
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    def __post_init__(self) -> None:
        if self.token is not None and len(self.token) < 16:
            raise DataError("serve: the token must be at least 16 characters")
        if not is_loopback(self.host) and not self.token:
            raise DataError(
                f"serve: refusing to bind {self.host}: anything but localhost needs a token "
                f"(--token-file FILE or ${TOKEN_ENV})"
            )
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise DataError("serve: --ssl-certfile and --ssl-keyfile go together")
        for name in ("lanes", "queue_size", "max_body_bytes", "max_programs", "max_tests"):
            if int(getattr(self, name)) < 1:
                raise DataError(f"serve: {name} must be at least 1")
        if self.lanes > self.total_workers():  # each lane runs at least one sandbox
            raise DataError(f"serve: {self.lanes} lanes need at least as many workers (have "
                            f"{self.total_workers()}): the node would run more sandboxes "
                            "than it has")  # fmt: skip
        if self.queue_size < self.lanes:
            raise DataError("serve: queue_size must be at least lanes")
        if not 0 <= self.port < 65536:
            raise DataError(f"serve: port {self.port} is out of range")

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_certfile else "http"

    def total_workers(self) -> int:
        """Sandboxes in all: `workers`, else one per CPU this process may run on (its
        affinity, which a container or `taskset` narrows; os.cpu_count() counts the host's)."""
        if self.workers:
            return self.workers
        from cppo_bench.verifier.cpus import process_cpus  # (lazy: the client needs none)

        return max(1, len(process_cpus()))

    def lane_workers(self) -> int:
        """Sandboxes per batch: the node's cores split among the lanes, so the service never
        runs more sandboxes at once than `workers` (lanes <= workers, checked above), and a
        batch never more than the CPUs this process may use (verifier.pool.sandbox_count);
        and whatever the lanes start, one test runs per CPU at a time (verifier/cpus.py)."""
        from cppo_bench.verifier.cpus import process_cpus

        return max(1, min(self.total_workers() // self.lanes, len(process_cpus())))
