"""Opening a backend by name, shared by the Python API (`cppo_bench.run`) and the CLI: a
registered name or `package.module:factory`, its default model label, and a context that
always closes it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import quote


def backend_factory(name: str) -> Callable[..., Any]:
    """A registered backend name, or `package.module:factory` for one of your own."""
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise DataError(f"backend {quote(name)}: cannot import ({exc})") from None
    from cppo_bench.backends import BACKENDS

    return BACKENDS.get(name)


def default_model_label(name: str, factory: Callable[..., Any]) -> str:
    """What a run without a model is called: the backend's declared default model."""
    declared = getattr(factory, "default_model", None) or getattr(
        importlib.import_module(factory.__module__), "DEFAULT_MODEL", None
    )
    return str(declared) if declared else f"{name}-default"


@contextmanager
def open_backend(name: str, model: str | None, options: dict[str, Any]) -> Iterator[Any]:
    """The backend `name` for `model`, built on first use (a fully cached run never loads a
    model) and closed when the block ends, however it ends: a model left open holds its
    memory, and a vLLM engine its GPU, until the process exits."""
    from cppo_bench.backends.streaming import LazyBackend

    factory = backend_factory(name)
    backend = LazyBackend(lambda: factory(model, **options), name)
    try:
        yield backend
    finally:
        backend.close()
