"""A tiny name -> object registry, shared by benchmarks, methods, backends and trainers."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name no entry was registered under; the message lists the known names."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to objects. Entries register themselves on import (decorator form).

    `lazy` maps a name to the module that registers it, so looking a name up imports
    only that module: `cppo-bench verify` never pays for importing the vLLM backend.
    """

    def __init__(self, kind: str, lazy: dict[str, str] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = dict(lazy or {})

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        if name not in self._entries and name in self._lazy:
            importlib.import_module(self._lazy[name])
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(set(self._entries) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
