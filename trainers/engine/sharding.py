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
* the gradient norm of DTensor gradients is reduced here (``clip_grad_norm``), on the compute
  device, so it also works when the gradients live on the host (offload) under NCCL.

``sharding: fsdp2_offload`` adds FSDP2's ``CPUOffloadPolicy``: fp32 parameters, gradients and
AdamW moments stay in host memory (pinned on CUDA) and the optimizer step runs on the CPU; the
device holds one unit's all-gathered parameters at a time (plus activations). It also applies
to one process (a 1-process mesh, ``process_group``). docs/gpu.md weighs the PCIe traffic.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import torch

from trainers.harness import env

SHARDED_WEIGHTS = "sharded_model.safetensors"
SHARDED_OPTIMIZER = "sharded_optimizer.safetensors"
SHARDED_OPTIMIZER_META = "sharded_optimizer.json"


def _env_true(name: str) -> bool:
    return env.flag(name, False)


def wants_fsdp(sharding: str) -> bool:
    """``sharding`` (TrainConfig): fsdp2 and fsdp2_offload always; auto when launched with
    accelerate's FSDP config (ACCELERATE_USE_FSDP) on more than one process; none never."""
    if sharding in ("fsdp2", "fsdp2_offload"):
        return True
    if sharding != "auto":
        return False
    world = env.world_size()
    return world > 1 and _env_true("ACCELERATE_USE_FSDP")


def wants_offload(sharding: str) -> bool:
    """Host-memory parameters, gradients and optimizer step: fsdp2_offload, or auto under
    accelerate's FSDP config with ``offload_params`` (FSDP_OFFLOAD_PARAMS) on several processes."""
    if sharding == "fsdp2_offload":
        return True
    return sharding == "auto" and wants_fsdp(sharding) and _env_true("FSDP_OFFLOAD_PARAMS")


def uses_fsdp(sharding: str, world: int) -> bool:
    """Whether the engine shards: several processes that want FSDP2, or any number with
    offload (one process offloads through a 1-process mesh; plain FSDP2 on one process would
    only add overhead)."""
    return wants_offload(sharding) or (world > 1 and wants_fsdp(sharding))


def mixed_backend() -> str:
    """The process-group backend an offloaded CUDA run needs: NCCL for the device tensors and
    gloo for host tensors (collectives over offloaded DTensors that torch runs where they
    live); accelerate picks the same pair for its own FSDP offload."""
    return "cuda:nccl,cpu:gloo"


@contextlib.contextmanager
def process_group(sharding: str) -> Iterator[None]:
    """A 1-process group for the duration when one process shards (``fsdp2_offload``): a
    device mesh needs a process group, and neither a plain launch nor accelerate (which reports
    no distributed type for one process) creates one. gloo on the CPU, NCCL + gloo on CUDA;
    destroyed on exit. A no-op under a launcher (WORLD_SIZE > 1) or with a group already up."""
    import torch.distributed as dist

    world = env.world_size()
    if world > 1 or not uses_fsdp(sharding, world) or dist.is_initialized():
        yield
        return
    backend = mixed_backend() if torch.cuda.is_available() else "gloo"
    # a HashStore: one process needs no rendezvous (no port to pick, nothing to collide)
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def layer_classes(model: Any) -> set[str]:
    """The class names HF marks as not splittable: the decoder layers, one FSDP unit each."""
    names = getattr(model, "_no_split_modules", None) or []
    return {str(n) for n in names}


def shard(model: Any, device: Any, world: int, offload: bool = False, mixed: Any = None) -> Any:
    """Shard ``model`` in place over every process (FSDP2) and return it. ``offload``: the
    shards stay in host memory (CPUOffloadPolicy), pinned only where CUDA can use the pins.
    ``mixed``: FSDP2's MixedPrecisionPolicy (``setup.mixed_precision``; None: fp32)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy, fully_shard

    device = torch.device(device)
    if offload:
        # CPUOffloadPolicy wants the parameters on the host; fully_shard moves each unit to
        # the device only to shard it, so the whole model never sits on the GPU at once
        model.to("cpu")
        policy: OffloadPolicy = CPUOffloadPolicy(pin_memory=torch.cuda.is_available())
    else:
        model.to(device)
        policy = OffloadPolicy()
    mesh = init_device_mesh(device.type, (world,))
    wanted = layer_classes(model)
    units = [m for m in model.modules() if type(m).__name__ in wanted and m is not model]
    mp = {"mp_policy": mixed} if mixed is not None else {}
    for unit in units:
        fully_shard(unit, mesh=mesh, offload_policy=policy, **mp)
    fully_shard(model, mesh=mesh, offload_policy=policy, **mp)
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


def param_groups(state: Any) -> list[Any]:
    """An FSDP2 unit state's parameter groups, on every torch the engine supports. torch has
    no public getter: 2.13 keeps a list ``_fsdp_param_groups`` (its ``_fsdp_param_group`` is
    a property that raises for several), 2.11 one ``_fsdp_param_group`` attribute. Every
    read of FSDP2's groups goes through here; reading only the 2.13 name silently found no
    group on 2.11, so ``gathered`` never restored resharding (issue 43)."""
    groups = getattr(state, "_fsdp_param_groups", None)
    if groups is not None:
        return list(groups)
    one = getattr(state, "_fsdp_param_group", None)
    return [one] if one is not None else []


def offload_policies(model: Any) -> list[Any]:
    """The offload policy of every FSDP2 parameter group (what FSDP really applies, read
    from its state: torch has no public getter). [] when unsharded."""
    return [
        g.offload_policy
        for unit in _fsdp_units(model)
        for g in param_groups(unit._get_fsdp_state())
    ]


def describe(model: Any) -> dict[str, Any]:
    """The layout a run really has (the training manifest's ``topology.sharding``)."""
    from torch.distributed.fsdp import CPUOffloadPolicy

    if not is_fsdp2(model):
        return {"fsdp2": False}
    policies = offload_policies(model)
    offload = bool(policies) and all(isinstance(p, CPUOffloadPolicy) for p in policies)
    first = next(iter(model.parameters()))
    groups = [g for unit in _fsdp_units(model) for g in param_groups(unit._get_fsdp_state())]
    computes = {str(g.mp_policy.param_dtype or first.dtype).removeprefix("torch.") for g in groups}
    return {
        "fsdp2": True,
        "mesh_size": int(first.device_mesh.size()) if hasattr(first, "device_mesh") else 1,
        "units": len(_fsdp_units(model)),
        "offload": "cpu" if offload else "none",
        "pinned": offload and all(p.pin_memory for p in policies),
        "param_dtype": ",".join(sorted(computes)),  # what forwards compute in
    }


def compute_device(model: Any) -> torch.device:
    """Where ``model``'s forward runs. Under offload the sharded parameters live on the host
    while all-gathered ones, buffers and activations live on the mesh's device, so the first
    parameter's device is not the answer."""
    first = next(iter(model.parameters()))
    mesh = getattr(first, "device_mesh", None)
    return first.device if mesh is None else _mesh_device(mesh)


def _mesh_device(mesh: Any) -> torch.device:
    """The device a mesh's collectives run on (CUDA: this process's current GPU)."""
    if mesh.device_type == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(mesh.device_type)


def full_tensor(t: Any) -> Any:
    """A DTensor's full tensor; an offloaded shard is moved to the compute device first (the
    mesh's backend may not reach host memory: NCCL), as torch's own state-dict gather does."""
    if not hasattr(t, "full_tensor"):
        return t
    if t.device.type != t.device_mesh.device_type:
        t = t.to(_mesh_device(t.device_mesh))
    return t.full_tensor()


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
    saved = [_reshard_setting(unit) for unit in units]
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
    for unit in units:
        unit.unshard()
    try:
        yield
    finally:
        for unit, setting in zip(units, saved, strict=True):
            unit.reshard()
            _restore_reshard_setting(unit, setting)


def _reshard_setting(unit: Any) -> tuple[bool, list[Any]]:
    """A unit's reshard-after-forward state as FSDP2 keeps it (torch 2.11-2.13: no getter):
    whether the lazy root default still applies, and each parameter group's post-forward mesh."""
    state = unit._get_fsdp_state()
    groups = param_groups(state)
    return bool(state._auto_reshard_after_forward), [g.post_forward_mesh_info for g in groups]


def _restore_reshard_setting(unit: Any, setting: tuple[bool, list[Any]]) -> None:
    """Undo ``set_reshard_after_forward``: setting it (to anything) clears FSDP2's lazy
    default that the root keeps its parameters unsharded after forward, so restoring "True"
    made embeddings and head all-gather again in every backward after the first rollout.
    A root whose lazy initialisation ran inside the block gets the value that initialisation
    would have given it (None: keep unsharded)."""
    auto, meshes = setting
    state = unit._get_fsdp_state()
    state._auto_reshard_after_forward = auto
    for group, mesh in zip(param_groups(state), meshes, strict=True):
        group.post_forward_mesh_info = None if auto and state._is_root else mesh


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
    """Clip like torch.nn.utils.clip_grad_norm_ and return the global norm as a float.

    DTensor gradients: each shard's squared norm is summed on the compute device and
    all-reduced over the mesh, then every local shard is scaled in place. Done by hand, not
    through the DTensor norm, because offloaded gradients live on the host while the mesh's
    backend may be NCCL only (a CPU tensor in an NCCL all-reduce fails)."""
    import torch.distributed as dist

    grads = [p.grad for p in params if p.grad is not None]
    sharded = [g for g in grads if hasattr(g, "to_local")]
    if not sharded:
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else math.inf)
        return float(norm)
    mesh = sharded[0].device_mesh
    dev = _mesh_device(mesh)
    # per-tensor fp32 norms as torch takes them; their squares summed in fp64
    parts = [local(g)[0] for g in grads]
    sq = torch.zeros(2, dtype=torch.float64, device=dev)  # [sharded, replicated]
    for g, part in zip(grads, parts, strict=True):
        n = torch.linalg.vector_norm(part, 2.0, dtype=torch.float32).to(dev, torch.float64)
        sq[0 if hasattr(g, "to_local") else 1] += n * n
    shard_sq = sq[:1].clone()
    dist.all_reduce(shard_sq, group=mesh.get_group())
    total = float((shard_sq[0] + sq[1]).sqrt())
    if max_norm > 0:
        coef = min(max_norm / (total + 1e-6), 1.0)
        for part in parts:
            part.mul_(coef)  # the local shard shares storage with the DTensor gradient
    return total


def full_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The full (unsharded) state dict on rank 0, on the CPU; {} on the other ranks. A
    collective: every process calls it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    # (full_state_dict: every value is a whole tensor, never the declared nested union)
    return cast(dict[str, torch.Tensor], get_model_state_dict(model, options=opts))


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
    # {"state": {fqn: {key: tensor or number}}, "param_groups": [...]}; torch declares a
    # recursive union that does not narrow
    optim: Any = get_optimizer_state_dict(model, optimizer, options=opts)
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
    from trainers.harness import OutDir

    OutDir(folder).write_text(SHARDED_OPTIMIZER_META, groups + "\n")


def read_sharded_state(folder: Path) -> dict[str, Any]:
    """The full model and optimizer state ``save_sharded_state`` wrote (host memory), read
    by rank 0 alone: ``apply_sharded_state`` broadcasts it, so the other processes hold no
    full copy (8 processes x 48 GB for a 4B policy with AdamW otherwise)."""
    from safetensors.torch import load_file

    weights = load_file(str(folder / SHARDED_WEIGHTS))
    state: dict[str, dict[str, Any]] = {}
    for name, tensor in load_file(str(folder / SHARDED_OPTIMIZER)).items():
        fqn, _, key = name.partition("\t")
        state.setdefault(fqn, {})[key] = tensor
    from trainers.harness import userfiles

    groups = userfiles.read_json(folder / SHARDED_OPTIMIZER_META, userfiles.MAX_SMALL)
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise ValueError("optimizer param groups are not a list of objects")
    return {"model": weights, "optimizer": {"state": state, "param_groups": groups}}


def apply_sharded_state(model: Any, optimizer: Any, full: dict[str, Any] | None) -> None:
    """Load ``read_sharded_state``'s result (rank 0; None elsewhere) into every process's
    shards. A collective: every process calls it, after all of them agreed the read worked
    (a process that raised before it would leave the others waiting in a broadcast)."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    full = full or {"model": {}, "optimizer": {}}
    set_model_state_dict(model, full["model"], options=opts)
    set_optimizer_state_dict(model, optimizer, full["optimizer"], options=opts)
