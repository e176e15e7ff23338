"""What the engine does differently under DeepSpeed (``accelerate launch`` with a DeepSpeed
config). Run on the CPU with accelerate 1.15 / DeepSpeed 0.19.8 (2 gloo processes, ZeRO-2 and
ZeRO-3: tests/trainers/test_trainers_deepspeed.py); on a GPU: never (docs/gpu.md).

* ``accelerator_kwargs``: without CUDA the engine asked accelerate for ``cpu=True``, and
  accelerate then ignores a DeepSpeed launch and runs DDP; a DeepSpeed launch on a CPU now
  asks for no device and names gloo.
* ``fill_config``: ``accelerator.prepare`` without a dataloader cannot resolve
  ``train_micro_batch_size_per_gpu: auto`` and raises; the engine fills it (and
  ``gradient_accumulation_steps``, ``gradient_clipping``) from TrainConfig before ``prepare``.
* one optimizer step per global step: accelerate's ``backward`` under DeepSpeed calls
  ``engine.step()`` whenever ``sync_gradients`` is true, which it always is without
  accelerate's own accumulation; ``update.policy_update`` therefore marks every micro-batch
  but the last as not a boundary (``micro_batch_boundary``).
* the reference model: under ZeRO-3 the loaded policy's parameters are partitioned (empty
  placeholders), so a ``deepcopy`` is an empty model. The reference is loaded from the
  checkpoint again, after ``prepare``, and wrapped in its own inference-only DeepSpeed engine
  (TRL does this), partitioned in ``reference_dtype``.
* saving: ``accelerator.get_state_dict`` under ZeRO-3 raises unless the config sets
  ``zero3_save_16bit_model``; ``checkpoint.save_hf`` gathers the full fp32 tensors module by
  module instead (``weight_sync.full_tensors``), so the flag is not needed.
* ZeRO-3 forwards are collectives: the update pads processes to the same number of
  micro-batches (``sharding.collective_forward``), generation runs under ``sharding.gathered``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any


def launched() -> bool:
    """Whether ``accelerate launch`` asked for DeepSpeed (its launcher sets this variable)."""
    from trainers.harness import env

    return env.flag("ACCELERATE_USE_DEEPSPEED", False)


def state_kwargs(cuda: bool, timeout_s: int | None = None) -> dict[str, Any]:
    """``PartialState`` arguments for this machine. Without CUDA the engine asks for the CPU
    (``cpu=True``): a plain run or torchrun then uses gloo. But accelerate 1.15 drops a
    DeepSpeed launch under ``cpu=True`` without a word (state.py: ``PartialState`` starts
    DeepSpeed only ``if not cpu``, ``AcceleratorState`` picks DEEPSPEED only ``and not cpu``)
    and runs DDP. So a DeepSpeed launch on a CPU asks for no device type at all and names
    gloo: DeepSpeed's CPU accelerator then runs ZeRO over gloo (oneCCL, its own default, is
    rarely installed), on ``cpu`` tensors. The CPPO pipeline's ``ranks`` builds the shared
    state first with the same arguments, so both see one layout. ``timeout_s``
    (TrainConfig ``dist_timeout_s``) goes to ``init_process_group`` (DeepSpeed's too)."""
    kwargs: dict[str, Any]
    if cuda:
        kwargs = {"cpu": False}
    elif not launched():
        kwargs = {"cpu": True}
    else:
        kwargs = {"cpu": False, "backend": "gloo"}
    if timeout_s is not None:
        from datetime import timedelta

        kwargs["timeout"] = timedelta(seconds=timeout_s)
    return kwargs


def accelerator_kwargs(
    cuda: bool, timeout_s: int | None = None, backend: str | None = None
) -> dict[str, Any]:
    """``state_kwargs`` as ``Accelerator`` takes them: backend and time-out through one
    ``InitProcessGroupKwargs`` (accelerate takes one handler of a kind); ``backend``
    overrides the state's (an offloaded CUDA run's NCCL + gloo pair)."""
    kwargs = state_kwargs(cuda, timeout_s)
    state_backend, timeout = kwargs.pop("backend", None), kwargs.pop("timeout", None)
    group = {"backend": backend or state_backend, "timeout": timeout}
    group = {k: v for k, v in group.items() if v is not None}
    if group:
        from accelerate.utils import InitProcessGroupKwargs

        kwargs["kwargs_handlers"] = [InitProcessGroupKwargs(**group)]
    return kwargs


def active(accelerator: Any) -> bool:
    return getattr(getattr(accelerator, "distributed_type", None), "name", "") == "DEEPSPEED"


def zero_stage(accelerator: Any) -> int:
    if not active(accelerator):
        return 0
    plugin = accelerator.state.deepspeed_plugin
    return int(plugin.deepspeed_config.get("zero_optimization", {}).get("stage", 0) or 0)


def fill_config(accelerator: Any, micro_batch_rows: int, max_grad_norm: float) -> None:
    """Resolve the "auto" values accelerate can only infer from a dataloader."""
    if not active(accelerator):
        return
    ds = accelerator.state.deepspeed_plugin.deepspeed_config
    if ds.get("train_micro_batch_size_per_gpu", "auto") == "auto":
        ds["train_micro_batch_size_per_gpu"] = int(micro_batch_rows)
    if ds.get("gradient_accumulation_steps", "auto") == "auto":
        ds["gradient_accumulation_steps"] = 1  # boundaries are set per micro-batch instead
    if ds.get("gradient_clipping", "auto") == "auto":
        ds["gradient_clipping"] = float(max_grad_norm) if max_grad_norm > 0 else 0.0
    ds.pop("train_batch_size", None)  # derived by DeepSpeed from the two above


def micro_batch_boundary(accelerator: Any, last: bool) -> None:
    """Tell accelerate (and through it DeepSpeed) whether this micro-batch ends the step."""
    if active(accelerator):
        accelerator.gradient_state._set_sync_gradients(last)


def reference(path: str, dtype: Any, accelerator: Any) -> Any:
    """A frozen reference under ZeRO-3: loaded again and run by its own DeepSpeed engine.
    Called after ``prepare`` (accelerate has resolved the config's "auto" values by then)."""
    import deepspeed
    import torch
    from transformers.integrations import deepspeed as hf_deepspeed

    from trainers.harness import load_model

    plugin = accelerator.state.deepspeed_plugin
    config = copy.deepcopy(plugin.deepspeed_config)
    for key in ("optimizer", "scheduler", "bf16", "fp16"):
        config.pop(key, None)
    config["zero_optimization"] = {**config.get("zero_optimization", {}), "stage": 3}
    # ZeRO-3 partitions in its config's dtype (fp32 without bf16/fp16), and transformers loads
    # under zero.Init with the config it finds in its global HfDeepSpeedConfig (accelerate's,
    # fp32): a bf16 reference_dtype was cast back to fp32. So the reference's own config,
    # stating its dtype, is the global one while it loads (partitioned as it loads), then
    # accelerate's is put back.
    if dtype in (torch.bfloat16, torch.float16):
        config["bf16" if dtype == torch.bfloat16 else "fp16"] = {"enabled": True}
    keep = hf_deepspeed.HfDeepSpeedConfig(config)  # sets the global (a weak reference)
    try:
        model, _, _ = load_model(path, dtype=dtype)
    finally:
        if getattr(plugin, "dschf", None) is not None:
            hf_deepspeed.set_hf_deepspeed_config(plugin.dschf)
        else:
            hf_deepspeed.unset_hf_deepspeed_config()
        del keep
    model.config.use_cache = False
    engine = deepspeed.initialize(model=model, config=config)[0]
    engine.eval()
    engine.requires_grad_(False)
    return engine


# The classes DeepSpeed 0.19 pickles into a ZeRO-1/2/3 training state (found by reading back
# every file of the CPU runs in tests/trainers/test_trainers_deepspeed.py with weights_only=True), plus
# the dynamic loss scaler of fp16 runs; a state that holds anything else is refused.
STATE_GLOBALS = (
    "deepspeed.runtime.zero.config.ZeroStageEnum",
    "deepspeed.runtime.fp16.loss_scaler.LossScaler",
    "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler",
    "deepspeed.utils.tensor_fragment.fragment_address",
)


def _resolve(name: str) -> Any:
    import importlib

    module, _, attr = name.strip().rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError):
        return None  # not in this DeepSpeed: nothing to admit


def check_state_pickles(folder: Path, trusted: str = "") -> None:
    """Refuse (one DataError line) a DeepSpeed state whose pickles hold anything but tensors,
    plain containers and the classes of ``STATE_GLOBALS`` (+ ``trusted``, comma-separated):
    DeepSpeed itself unpickles them with ``weights_only=False``, so a planted file would run
    its code at the resume. Each ``*.pt`` is read once with torch's restricted unpickler,
    memory-mapped (its tensors are not read into memory)."""
    import pickle

    import torch

    from trainers.harness import DataError

    names = [*STATE_GLOBALS, *(n for n in trusted.split(",") if n.strip())]
    allowed = [obj for obj in map(_resolve, names) if obj is not None]
    for path in sorted(Path(folder).rglob("*.pt")):
        try:
            with torch.serialization.safe_globals(allowed):
                torch.load(path, weights_only=True, mmap=True, map_location="cpu")
        except pickle.UnpicklingError as exc:
            found = _global_named(str(exc))
            raise DataError(
                f"{path}: holds {found or 'a pickled object'}, which resuming would run as "
                "code (DeepSpeed unpickles its state unrestricted); refused. A state you "
                "wrote yourself with a DeepSpeed that pickles another class: add its name to "
                "the config key trusted_state_globals"
            ) from None
        except Exception as exc:  # a torn or foreign file
            raise DataError(
                f"{path}: not a readable DeepSpeed state ({type(exc).__name__})"
            ) from None


def _global_named(message: str) -> str:
    import re

    # word characters and dots only: nothing from the file reaches the terminal unescaped
    m = re.search(r"GLOBAL ([\w.]+) was not an allowed", message)
    return m.group(1)[:120] if m else ""
