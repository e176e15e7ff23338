"""What the CLI commands share: one KEY=VALUE parser, one --bench/--data/-o option set, and
one way to open a backend that is always closed again."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from cppo_bench.keyvals import KeyValueError, parse_pairs

F = TypeVar("F", bound=Callable[..., Any])


def parse_kv(
    pairs: tuple[str, ...], what: str = "-o/--option", dotted: bool = False
) -> dict[str, Any]:
    """`KEY=VALUE` pairs through the CLI's one parser (cppo_bench.keyvals): JSON where the
    value parses as JSON, text otherwise; a key given twice is an error."""
    try:
        return parse_pairs(pairs, dotted=dotted)
    except KeyValueError as exc:
        raise click.BadParameter(str(exc), param_hint=what) from None


def bench_options(func: F) -> F:
    """--bench NAME, --data PATH and repeatable -o KEY=VALUE loader options, as the
    parameters `bench`, `data_path` and `option_pairs`."""
    options = [
        click.option("--bench", required=True, help="Benchmark (see `cppo-bench data list`)."),
        click.option(
            "--data",
            "data_path",
            type=click.Path(exists=True),
            help="Local copy: JSONL / JSON / parquet / save_to_disk folder / APPS release "
            "folder. Default: the benchmark's Hugging Face dataset (the packaged file for demo).",
        ),
        click.option(
            "-o",
            "--option",
            "--loader-option",  # the name `run` used before; kept for existing scripts
            "option_pairs",
            multiple=True,
            metavar="KEY=VALUE",
            help="Loader option, repeatable (e.g. -o difficulty=all -o subset=0, "
            "-o release_version=release_v6 -o start_date=2025-02-01).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def backend_factory(name: str) -> Callable[..., Any]:
    """A registered backend name, or `package.module:factory` for one of your own."""
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise click.ClickException(f"backend {name!r}: cannot import ({exc})") from None
    from cppo_bench.backends import BACKENDS

    return BACKENDS.get(name)


def default_model_label(name: str, factory: Callable[..., Any]) -> str:
    """What a run without --model is called: the backend's declared default model."""
    declared = getattr(factory, "default_model", None) or getattr(
        importlib.import_module(factory.__module__), "DEFAULT_MODEL", None
    )
    return str(declared) if declared else f"{name}-default"


@contextmanager
def open_backend(name: str, model: str | None, options: dict[str, Any]) -> Iterator[Any]:
    """The backend `name` for `model`, built on first use (a fully cached run never loads a
    model) and closed when the block ends, however it ends: a model left open holds its
    memory, and a vLLM engine its GPU, until the process exits."""
    from cppo_bench.gencache import LazyBackend

    factory = backend_factory(name)
    backend = LazyBackend(lambda: factory(model, **options), name)
    try:
        yield backend
    finally:
        backend.close()
