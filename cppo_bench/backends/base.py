"""The seam between methods (and trainers' rollouts) and inference engines."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from cppo_bench.errors import DataError


class BackendError(DataError):
    """A backend that cannot do its job for a reason the user can fix (a missing model or
    package, an unreachable server). One clear line; a DataError so the CLI prints just that."""


class ModelLoadError(BackendError):
    """A model (the embedded default or --model) that cannot be loaded."""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 2048
    seed: int = 0
    stop: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass(frozen=True)
class GenRequest:
    """One generation. Chat models get `messages` (rendered with the model's chat
    template); base models get `prompt`. Exactly one of the two is set."""

    params: SamplingParams
    messages: tuple[dict[str, str], ...] | None = None
    prompt: str | None = None
    tag: str = ""  # free-form label for logs (e.g. "planner", "solver")

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("GenRequest needs exactly one of messages or prompt")

    def cache_key(self, model_id: str) -> str:
        """Key of the generation cache: model + prompt + sampling params + seed."""
        payload = json.dumps(
            {
                "model": model_id,
                "messages": [dict(m) for m in self.messages] if self.messages else None,
                "prompt": self.prompt,
                "params": self.params.to_dict(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class GenResult:
    text: str
    num_tokens: int  # decoded (generated) tokens; prompt tokens excluded
    finish_reason: str  # "stop" | "length" | "error"
    prompt_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


ProgressFn = Callable[[int], None]  # called with the number of results just finished
# Called with (request index, result) as each result finishes, by a backend that declares
# `streams_results = True` and takes `on_result=`: the run stores each generation at once,
# so an interrupt loses only the generations in flight, not a whole batch.
ResultFn = Callable[[int, "GenResult"], None]


class Backend(Protocol):
    name: str
    model_id: str  # what identifies the weights in cache keys and manifests

    def generate(
        self, requests: Sequence[GenRequest], progress: ProgressFn | None = None
    ) -> list[GenResult]:
        """Generate one result per request, in order. Batches internally."""
        ...

    def close(self) -> None: ...
