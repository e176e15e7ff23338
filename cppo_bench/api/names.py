"""The registered names a user may give (methods, benchmarks, backends, ...): what the CLI's
help lists and what it checks a name against before anything loads."""

from __future__ import annotations

import importlib
from typing import Any

from cppo_bench.util.registry import Registry

# what a user names -> "module:REGISTRY"
REGISTRIES: dict[str, str] = {
    "method": "cppo_bench.methods:METHODS",
    "benchmark": "cppo_bench.benchmarks:BENCHMARKS",
    "backend": "cppo_bench.backends:BACKENDS",
    "grouping": "cppo_bench.stats.slices:GROUPERS",
    "checker": "cppo_bench.verifier.compare:CHECKERS",
    "samples stage view": "cppo_bench.runner.sample_stages:STAGE_VIEWS",
    "report metric": "cppo_bench.report.measures:METRICS",
    "figure kind": "cppo_bench.report.figures:FIGURE_KINDS",
    "table kind": "cppo_bench.report.labels:TABLE_KINDS",
}


def registry(kind: str) -> Registry[Any]:
    """The registry of `kind` (a key of REGISTRIES), imported on first use."""
    module, _, attr = REGISTRIES[kind].partition(":")
    found: Registry[Any] = getattr(importlib.import_module(module), attr)
    return found


def listing(kind: str) -> str:
    """Every registered name, then the aliases (help text: never a trailing '...')."""
    known = registry(kind)
    aliases = ", ".join(f"{a}={n}" for a, n in sorted(known.aliases().items()))
    return ", ".join(known.names()) + (f" (aliases: {aliases})" if aliases else "")


def check(kind: str, name: str) -> str:
    """`name`'s one registered name (an alias resolved), or UnknownNameError listing the known
    ones: asked before anything loads, so a typo costs one line, not a model load."""
    known = registry(kind)
    known.get(name)
    return known.canonical(name)


def method_takes(method: str, option: str) -> bool:
    """Whether method `method` has the option `option` (a field of its options type)."""
    options = registry("method").get(method).options_type
    return option in getattr(options, "__dataclass_fields__", {})


def check_backend(name: str) -> None:
    """A registered backend name, or an importable ``package.module:factory``; else one line."""
    from cppo_bench.backends.opening import backend_factory

    backend_factory(name)


def open_backend(name: str, model: str | None, options: dict[str, Any]) -> Any:
    """The backend `name` for `model`, as a context that closes it (cppo_bench.backends.opening);
    an unknown or unimportable factory is one line before anything starts."""
    from cppo_bench.backends.opening import open_backend as opened

    check_backend(name)
    return opened(name, model, options)
