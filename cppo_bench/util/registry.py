"""A tiny name -> object registry, shared by benchmarks, methods, backends and trainers."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from cppo_bench.errors import UnknownNameError
from cppo_bench.util.termsafe import quote

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects. Entries register themselves on import (decorator form).

    `lazy` maps a name to "module:attribute", the object a lookup imports (only that
    module: `cppo-bench verify` never pays for importing the vLLM backend), or to a bare
    module that registers the name itself. The first form lets a plugin import nothing
    of the package front that lists it (no loop: tests/structure/test_bench_layers.py).
    """

    def __init__(
        self,
        kind: str,
        lazy: dict[str, str] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = dict(lazy or {})
        # other spellings of a name (another harness's: livecodebench for lcb); a lookup by
        # one finds the entry, and `canonical` gives the one name stored in runs
        self._aliases: dict[str, str] = dict(aliases or {})

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                raise ValueError(f"{self.kind} {quote(name)} is registered twice")
            self._entries[name] = obj
            return obj

        return decorator

    def canonical(self, name: str) -> str:
        """The registered name `name` stands for (itself unless it is an alias)."""
        return self._aliases.get(name, name)

    def aliases(self) -> dict[str, str]:
        return dict(self._aliases)

    def get(self, name: str) -> T:
        name = self.canonical(name)
        if name not in self._entries and name in self._lazy:
            module, _, attr = self._lazy[name].partition(":")
            loaded = importlib.import_module(module)
            if attr and name not in self._entries:
                self.register(name)(getattr(loaded, attr))
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            raise UnknownNameError(f"unknown {self.kind} {quote(name)}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(set(self._entries) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        name = self._aliases.get(name, name) if isinstance(name, str) else name
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
