"""One config object per command: how an API function's settings are declared and built.

Each API function that a CLI command calls takes one frozen dataclass of settings
(``RunConfig`` for `run`, ...). Its fields are the command's settings: their type, default and
help text are said once, here, and the CLI takes its defaults and help from them
(`cppo_bench.cli.options.configured`), and the option reference (docs/options.md) is
generated from them. A config is built by the one strict builder (cppo_bench.util.builder), so
the CLI, a Python caller and a stored manifest meet the same type rules and the same one-line
error naming the setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, TypeVar

from cppo_bench.errors import DataError, SettingError
from cppo_bench.util.builder import BuildError, build
from cppo_bench.util.termsafe import quote

C = TypeVar("C")

HELP = "help"


def setting(default: Any, help: str) -> Any:
    """A config field with its default and its help text (one sentence, as --help shows it);
    a mutable default (a dict) is given as a factory."""
    if isinstance(default, dict | list | set):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata={HELP: help})
    return dataclasses.field(default=default, metadata={HELP: help})


def required(help: str) -> Any:
    """A config field with no default: the caller must give it."""
    return dataclasses.field(metadata={HELP: help})


def help_of(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get(HELP, ""))


def default_of(field: dataclasses.Field[Any]) -> Any:
    """The field's default value (a fresh one for a factory), or dataclasses.MISSING."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def build_config(cls: type[C], values: Mapping[str, Any], *, from_text: bool = False) -> C:
    """``cls`` from ``values`` through the strict builder: an unknown setting, a wrong type or
    the config's own check (its ``__post_init__``) is one line naming the setting. A value of
    None means "not given" (the config's default applies), as an unset CLI option is None.
    A config may say how the text forms a user types become its types (a ``normalize``
    staticmethod: seeds "0,1,2", a shard "3/8"); it runs first, for every caller."""
    normalize = getattr(cls, "normalize", None)
    if normalize is not None:
        values = normalize(values)
    # a path is given as text (click's Path type, a caller's pathlib.Path): the builder's
    # `str` refuses anything else, and a config holds plain data
    given = {key: str(value) if isinstance(value, PurePath) else value
             for key, value in values.items() if value is not None}  # fmt: skip
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if default_of(field) is dataclasses.MISSING and field.name not in given:
            raise SettingError(field.name, "missing (this setting has no default)")
    try:
        built: C = build(cls, given, label="setting", from_text=from_text)
    except BuildError as exc:
        raise _named(exc, cls) from None
    return built


def _named(exc: BuildError, cls: type) -> DataError:
    """The builder's line as a SettingError naming the top-level field it is about ("setting
    seeds[1]: ..." is about `seeds`), so the CLI can say the flag; else the line as it is."""
    text = str(exc)
    for prefix in ("setting ", "unknown setting key "):
        if text.startswith(prefix):
            name = text[len(prefix) :].split(":", 1)[0].split(" ", 1)[0]
            top = name.split(".", 1)[0].split("[", 1)[0]
            if top in {f.name for f in dataclasses.fields(cls)}:
                why = text[len(prefix) + len(name) :].lstrip(": ")
                return SettingError(top, f"{name[len(top) :].lstrip('.')} {why}".strip())
    return exc


def take_config(cls: type[C], config: C | None, settings: Mapping[str, Any]) -> C:
    """An API function's config: the one given, or one built from its keyword settings
    (not both), so Python callers may give either."""
    if config is None:
        return build_config(cls, settings)
    if settings:
        raise DataError(f"give a {cls.__name__} or settings, not both")
    if not isinstance(config, cls):
        raise DataError(f"expected a {cls.__name__}, got {quote(type(config).__name__)}")
    return config
