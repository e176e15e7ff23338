"""`cppo-bench serve`: the sandboxed verifier as an HTTP service (docs/serve.md). `ServeConfig`
holds every setting of the command; `serve` takes it (or its fields as keywords), loads the
--bench problems a request may name, and serves until stopped. (The server's own, checked
form of the settings is cppo_bench.serve.config.ServeConfig; this one is what a user types.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.api.config import build_config, setting
from cppo_bench.errors import BackendError, DataError

# setting -> (lowest, highest) it may be: the sizes are counts, the time limit CPU seconds
RANGES: dict[str, tuple[float, float]] = {
    "port": (0, 65535),
    "workers": (1, 4096),
    "lanes": (1, 4096),
    "queue_size": (1, 1 << 20),
    "max_programs": (1, 1 << 20),
    "max_tests": (1, 1 << 20),
    "max_body_mb": (1, 1 << 16),
    "max_output_mb": (1, 1 << 16),
    "max_time_limit": (0.001, 60),
}


@dataclass(frozen=True)
class ServeConfig:
    """Every setting of `cppo-bench serve` (docs/options.md lists them)."""

    bench: str | None = setting(None, "Benchmark whose problems a request may name by id.")
    data: str | None = setting(None, "Local copy of the benchmark's data (default: its dataset).")
    loader_options: dict[str, Any] = setting({}, "Options of the benchmark's loader (KEY=VALUE).")
    host: str = setting("127.0.0.1", "Address to bind; anything but localhost needs a token.")
    port: int = setting(8600, "Port (0: any free port; the ready line names it).")
    token_file: str | None = setting(None, "File holding the bearer token [$CPPO_SERVE_TOKEN].")
    workers: int | None = setting(None, "Sandboxes in all [cores].")
    lanes: int = setting(1, "Requests verified at once (the workers split among them).")
    queue_size: int = setting(8, "Requests waiting or running; past this a request gets 429.")
    max_programs: int = setting(256, "Programs per request at most.")
    max_tests: int = setting(512, "Tests per inline problem.")
    max_body_mb: int = setting(32, "Request body size at most, in MiB.")
    max_output_mb: int = setting(16, "Output cap per test (a request may ask less).")
    max_time_limit: float = setting(30.0, "Largest per-test CPU seconds a request may ask.")
    reuse_sandboxes: bool = setting(
        True,
        "Keep idle sandboxes between requests (the same isolation as two programs of one "
        "request; saves each request's sandbox start-up), or start each request's own.",
    )
    ssl_certfile: str | None = setting(
        None, "TLS certificate (PEM; with --ssl-keyfile): serve https."
    )
    ssl_keyfile: str | None = setting(None, "TLS private key (PEM) of --ssl-certfile.")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """Paths as text (a CLI path option gives a Path)."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}

    def __post_init__(self) -> None:
        if self.bench is None and (self.data is not None or self.loader_options):
            raise ValueError("data and loader options go with bench")
        for name, (low, high) in RANGES.items():  # the CLI's ranges, for every caller
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise ValueError(f"{name} {value}: give {low} to {high}")

    def server_config(self) -> Any:
        """The server's checked config (token read, loopback rule, ranges: one line each)."""
        from cppo_bench.serve.config import ServeConfig as ServerConfig

        return ServerConfig(host=self.host, port=self.port, token=_token(self.token_file),
                            workers=self.workers, lanes=self.lanes,
                            queue_size=max(self.queue_size, self.lanes),
                            max_programs=self.max_programs, max_tests=self.max_tests,
                            max_body_bytes=self.max_body_mb << 20,
                            max_output_mb=self.max_output_mb, max_time_s=self.max_time_limit,
                            reuse_sandboxes=self.reuse_sandboxes,
                            ssl_certfile=self.ssl_certfile,
                            ssl_keyfile=self.ssl_keyfile)  # fmt: skip


def _token(token_file: str | None) -> str | None:
    """From a file (never the command line: it would show in `ps`) or the environment."""
    from cppo_bench.files.userfiles import UserFileError, read_text
    from cppo_bench.serve.config import env_token

    if token_file is None:
        return env_token()
    try:
        text = read_text(Path(token_file), max_bytes=4096).strip()
    except (UserFileError, UnicodeDecodeError) as exc:
        raise DataError(f"{token_file}: cannot read the token ({exc})") from None
    if not text or len(text.splitlines()) != 1:
        raise DataError(f"{token_file}: expected one line holding the token")
    return text


def serve(
    config: ServeConfig | None = None,
    *,
    on_note: Callable[[str], None] | None = None,
    **settings: Any,
) -> None:
    """Verify programs over HTTP (POST /verify) until stopped, as `cppo-bench serve` does.
    Every setting is checked, and the --bench problems loaded (`on_note` hears the records
    skipped), before the port is bound."""
    if config is None:
        config = build_config(ServeConfig, settings)
    elif settings:
        raise DataError("serve: give a ServeConfig or settings, not both")
    try:
        from cppo_bench.serve.pipeline import ServeState
        from cppo_bench.serve.server import serve as run_server
    except ModuleNotFoundError as exc:
        raise BackendError(f"serve needs {exc.name}: pip install 'cppo-bench[serve]'") from None
    from cppo_bench.api.programs import problem_index
    from cppo_bench.benchmarks.load import load_result

    server = config.server_config()
    problems: dict[str, Any] = {}
    if config.bench is not None:
        loaded = load_result(config.bench, config.data, unique=False, **config.loader_options)
        for error in loaded.errors[:10]:
            if on_note is not None:
                on_note(f"skipped record: {error}")
        problems, _ = problem_index(loaded.problems)
    run_server(ServeState(server, problems=problems, bench=config.bench))
