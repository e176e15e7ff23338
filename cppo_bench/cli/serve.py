"""`cppo-bench serve`: the sandboxed verifier as an HTTP service (docs/serve.md;
cppo_bench.api.serve does the work)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.api.serve import ServeConfig
from cppo_bench.cli.options import bench_options, configured, parse_kv
from cppo_bench.util.termsafe import echo


@configured(ServeConfig, names={"data_path": "data"}, parsed={"option_pairs": "loader_options"})
@click.command("serve")
@bench_options(required=False)
@click.option("--host")
@click.option("--port", type=click.IntRange(0, 65535))
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--workers", type=click.IntRange(min=1))
@click.option("--lanes", type=click.IntRange(min=1))
@click.option("--queue-size", type=click.IntRange(min=1))
@click.option("--max-programs", type=click.IntRange(min=1))
@click.option("--max-tests", type=click.IntRange(min=1))
@click.option("--max-body-mb", type=click.IntRange(min=1))
@click.option("--max-output-mb", type=click.IntRange(min=1))
@click.option("--max-time-limit", type=click.FloatRange(min=0.001, max=60))
@click.option("--reuse-sandboxes/--fresh-sandboxes", default=True, show_default=True)
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False))
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False))
def serve(**opts: Any) -> None:
    """Verify programs over HTTP (POST /verify), in the same sandbox as `verify`, every
    test run; tests inline or a --bench problem id. Bound to localhost unless a token is set."""
    from cppo_bench.api.config import build_config
    from cppo_bench.api.serve import serve as run_service

    settings = {f: opts[f] for f in ServeConfig.__dataclass_fields__ if f in opts}
    config = build_config(ServeConfig, {
        **settings,
        "data": opts["data_path"],
        "loader_options": parse_kv(opts["option_pairs"]),
    })  # fmt: skip
    run_service(config, on_note=lambda line: echo(line, err=True))
