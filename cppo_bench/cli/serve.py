"""`cppo-bench serve`: the sandboxed verifier as an HTTP service (docs/serve.md)."""

from __future__ import annotations

from pathlib import Path

import click

from cppo_bench.cli.options import bench_options, parse_kv
from cppo_bench.errors import BackendError, DataError
from cppo_bench.files.userfiles import UserFileError, read_text
from cppo_bench.util.termsafe import echo, safe


def _token(token_file: Path | None) -> str | None:
    """From a file (never the command line: it would show in `ps`) or the environment."""
    from cppo_bench.serve.config import env_token

    if token_file is not None:
        try:
            text = read_text(token_file, max_bytes=4096).strip()
        except (UserFileError, UnicodeDecodeError) as exc:
            raise DataError(f"{token_file}: cannot read the token ({exc})") from None
        if not text or len(text.splitlines()) != 1:
            raise click.ClickException(f"{token_file}: expected one line holding the token")
        return text
    return env_token()


@click.command("serve")
@bench_options(required=False)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but localhost needs a token.")  # fmt: skip
@click.option("--port", type=click.IntRange(0, 65535), default=8600, show_default=True,
              help="Port (0: any free port; the ready line names it).")  # fmt: skip
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the bearer token [$CPPO_SERVE_TOKEN].")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), help="Sandboxes in all [cores].")
@click.option("--lanes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Requests verified at once (the workers split among them).")  # fmt: skip
@click.option("--queue-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Requests waiting or running; past this a request gets 429.")  # fmt: skip
@click.option("--max-programs", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--max-tests", type=click.IntRange(min=1), default=512, show_default=True,
              help="Tests per inline problem.")  # fmt: skip
@click.option("--max-body-mb", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--max-output-mb", type=click.IntRange(min=1), default=16, show_default=True,
              help="Output cap per test (a request may ask less).")  # fmt: skip
@click.option("--max-time-limit", type=click.FloatRange(min=0.001, max=60), default=30.0,
              show_default=True, help="Largest per-test CPU seconds a request may ask.")  # fmt: skip
@click.option("--reuse-sandboxes/--fresh-sandboxes", default=True, show_default=True,
              help="Keep idle sandboxes between requests (the same isolation as two programs "
              "of one request; saves each request's sandbox start-up), or start each "
              "request's own.")  # fmt: skip
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False),
              help="TLS certificate (PEM; with --ssl-keyfile): serve https.")  # fmt: skip
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False),
              help="TLS private key (PEM) of --ssl-certfile.")  # fmt: skip
def serve(bench: str | None, data_path: str | None, option_pairs: tuple[str, ...], host: str,
          port: int, token_file: Path | None, workers: int | None, lanes: int,
          queue_size: int, max_programs: int, max_tests: int, max_body_mb: int,
          max_output_mb: int, max_time_limit: float, reuse_sandboxes: bool = True,
          ssl_certfile: str | None = None, ssl_keyfile: str | None = None) -> None:  # fmt: skip
    """Verify programs over HTTP (POST /verify), in the same sandbox as `verify`, every
    test run; tests inline or a --bench problem id. Bound to localhost unless a token is set."""
    try:
        from cppo_bench.serve.pipeline import ServeState
        from cppo_bench.serve.server import serve as run_server
    except ModuleNotFoundError as exc:
        raise BackendError(f"serve needs {exc.name}: pip install 'cppo-bench[serve]'") from None
    from cppo_bench import api
    from cppo_bench.api.programs import problem_index
    from cppo_bench.serve.config import ServeConfig

    config = ServeConfig(host=host, port=port, token=_token(token_file), workers=workers,
                         lanes=lanes, queue_size=max(queue_size, lanes),
                         max_programs=max_programs, max_tests=max_tests,
                         max_body_bytes=max_body_mb << 20, max_output_mb=max_output_mb,
                         max_time_s=max_time_limit, reuse_sandboxes=reuse_sandboxes,
                         ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile)  # fmt: skip
    problems: dict = {}
    if bench is not None:
        loaded = api.data.load_result(bench, data_path, unique=False, **parse_kv(option_pairs))
        for e in loaded.errors[:10]:
            echo(f"skipped record: {safe(e)}", err=True)
        problems, _ = problem_index(loaded.problems)
    elif data_path is not None or option_pairs:
        raise click.UsageError("--data and -o go with --bench")
    run_server(ServeState(config, problems=problems, bench=bench))
