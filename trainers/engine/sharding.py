"""FSDP2 sharding that the engine applies itself: one code path on CPU (gloo) and GPU (NCCL).

accelerate's FSDP plugin does nothing under ``Accelerator(cpu=True)`` (it reports MULTI_CPU and
leaves plain parameters), so a CPU test through it never reaches the sharded branch. The engine
therefore shards the policy with ``torch.distributed.fsdp.fully_shard`` over a 1-D device mesh
of every process: each decoder layer (``model._no_split_modules``) is one FSDP unit, the root
holds the rest (embeddings, final norm, a tied head). Parameters become DTensors.

What sharding changes elsewhere, and why:

* collectives run inside every forward (all-gather) and backward (reduce-scatter), so every
  process must run the same number of them. Generation and no-grad scoring decode a different
  number of steps per process; ``gathered(model)`` all-gathers every unit once (the same
  collectives on every process) and keeps them unsharded while the process decodes alone.
  The update pads each process to the same number of micro-batches (``update.py``).
* a full state dict (HF folder, weight sync, training state) is gathered with
  ``torch.distributed.checkpoint.state_dict``: rank 0 receives it, on the CPU.
* the gradient norm of DTensor gradients is a DTensor: ``clip_grad_norm`` reduces it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

SHARDED_WEIGHTS = "sharded_model.safetensors"
SHARDED_OPTIMIZER = "sharded_optimizer.safetensors"
SHARDED_OPTIMIZER_META = "sharded_optimizer.json"


def wants_fsdp(sharding: str) -> bool:
    """``sharding`` (TrainConfig): fsdp2 always; auto when launched with accelerate's FSDP
    config (ACCELERATE_USE_FSDP) on more than one process; none never."""
    if sharding == "fsdp2":
        return True
    if sharding != "auto":
        return False
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return world > 1 and os.environ.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true")


def layer_classes(model: Any) -> set[str]:
    """The class names HF marks as not splittable: the decoder layers, one FSDP unit each."""
    names = getattr(model, "_no_split_modules", None) or []
    return {str(n) for n in names}


def shard(model: Any, device: Any, world: int) -> Any:
    """Shard ``model`` in place over every process (FSDP2) and return it."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    device = torch.device(device)
    model.to(device)
    mesh = init_device_mesh(device.type, (world,))
    wanted = layer_classes(model)
    units = [m for m in model.modules() if type(m).__name__ in wanted and m is not model]
    for unit in units:
        fully_shard(unit, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def is_fsdp2(model: Any) -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # pragma: no cover - torch without FSDP2
        return False
    return isinstance(model, FSDPModule)


def is_zero3(model: Any) -> bool:
    """Parameters partitioned by DeepSpeed ZeRO-3 (they carry ``ds_id``; the engine wrapper
    yields its module's parameters)."""
    return any(hasattr(p, "ds_id") for p in model.parameters())


def collective_forward(model: Any) -> bool:
    """Whether every forward and backward of ``model`` is a collective (FSDP2 all-gathers a
    unit, ZeRO-3 a module's partitions): then every process must run as many as the others."""
    return is_fsdp2(model) or is_zero3(model)


def _fsdp_units(model: Any) -> list[Any]:
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


@contextlib.contextmanager
def gathered(model: Any) -> Iterator[None]:
    """Every FSDP2 unit unsharded for the duration (one all-gather each, the same on every
    process), so forwards inside run no collective: processes may then decode different
    numbers of steps. ZeRO-3: every partition gathered for the block (``GatheredParameters``;
    forwards inside fetch nothing). No-op when unsharded. Memory: the full parameters while
    the block lasts (as vLLM would hold)."""
    if is_zero3(model):
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=None):
            yield
        return
    if not is_fsdp2(model):
        yield
        return
    units = _fsdp_units(model)
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
    for unit in units:
        unit.unshard()
    try:
        yield
    finally:
        for unit in units:
            unit.reshard()
            unit.set_reshard_after_forward(True, recurse=False)


def local(t: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(this process's part of a parameter, whether the parts are disjoint shards).
    DTensor (FSDP2): its local shard; a ZeRO-3 parameter: its partition; else the tensor
    itself, replicated (DDP, ZeRO-1/2): summing it over processes would count it N times."""
    if hasattr(t, "to_local"):
        return t.to_local(), True
    ds = getattr(t, "ds_tensor", None)
    if ds is not None:
        return ds, True
    return t, False


def clip_grad_norm(params: list[Any], max_norm: float) -> float:
    """Clip like torch.nn.utils.clip_grad_norm_ and return the global norm as a float
    (DTensor gradients give a DTensor norm, reduced over the shards here)."""
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else math.inf)
    if hasattr(norm, "full_tensor"):
        norm = norm.full_tensor()
    return float(norm)


def full_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The full (unsharded) state dict on rank 0, on the CPU; {} on the other ranks. A
    collective: every process calls it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=opts)


def save_sharded_state(model: Any, optimizer: Any, folder: Path, main: bool) -> None:
    """Model and optimizer of a sharded run as full tensors (safetensors) plus the optimizer's
    param groups (JSON), written by rank 0: a resume unpickles nothing."""
    from safetensors.torch import save_file
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_optimizer_state_dict,
    )

    weights = full_state_dict(model)
    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    optim = get_optimizer_state_dict(model, optimizer, options=opts)
    if not main:
        return
    save_file({k: v.contiguous() for k, v in weights.items()}, str(folder / SHARDED_WEIGHTS))
    tensors = {
        f"{fqn}\t{key}": torch.as_tensor(value).contiguous()
        for fqn, per_param in optim["state"].items()
        for key, value in per_param.items()
    }
    save_file(tensors, str(folder / SHARDED_OPTIMIZER))
    groups = json.dumps(optim["param_groups"], sort_keys=True)
    (folder / SHARDED_OPTIMIZER_META).write_text(groups + "\n")


def load_sharded_state(model: Any, optimizer: Any, folder: Path) -> None:
    """Inverse of ``save_sharded_state``: every process reads the full tensors (host memory;
    the state folder is shared, as accelerate's own state is) and keeps its shard."""
    from safetensors.torch import load_file
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    weights = load_file(str(folder / SHARDED_WEIGHTS))
    state: dict[str, dict[str, Any]] = {}
    for name, tensor in load_file(str(folder / SHARDED_OPTIMIZER)).items():
        fqn, _, key = name.partition("\t")
        state.setdefault(fqn, {})[key] = tensor
    groups = json.loads((folder / SHARDED_OPTIMIZER_META).read_text(encoding="utf-8"))
    if not isinstance(groups, list):
        raise ValueError("optimizer param groups are not a list")
    full = StateDictOptions(full_state_dict=True)
    set_model_state_dict(model, weights, options=full)
    set_optimizer_state_dict(
        model, optimizer, {"state": state, "param_groups": groups}, options=full
    )
