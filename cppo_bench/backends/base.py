"""The seam between methods (and trainers' rollouts) and inference engines."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from cppo_bench.errors import BackendError, DataError, ModelLoadError  # noqa: F401
from cppo_bench.util.progress import ProgressFn
from cppo_bench.util.sampling import SAMPLING_RANGES
from cppo_bench.util.termsafe import quote


class SamplingError(DataError):
    """Sampling settings no backend can honour (a negative temperature, top_p outside (0, 1])."""


def check_sampling(**settings: Any) -> None:
    """Raise SamplingError ("option 'temperature': nan is not finite") for the first setting
    outside its range; settings that are None or not listed pass."""
    for key, check in SAMPLING_RANGES.items():
        value = settings.get(key)
        why = None if value is None else check(value)
        if why:
            raise SamplingError(f"option {quote(key)}: {why}")


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 2048
    seed: int = 0
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # every generation's settings pass here: a negative temperature was taken as greedy
        # by hf while the manifest recorded -1.0 (a run that is not what it says)
        check_sampling(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)

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
    # the prompt it renders (e.g. "plansearch_sketch"): progress lines name the stage running
    stage: str = ""

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
