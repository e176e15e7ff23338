"""What a weight sync hands to an inference engine: full tensors, one at a time, under the
names the engine's model class expects.

Gathering (``full_tensors``): the policy may be sharded. A plain ``state_dict()`` would hand
FSDP1's flat views, FSDP2's DTensor shards or ZeRO-3's empty placeholders, so each layout is
gathered explicitly, a layer (or a tensor) at a time, so the peak is one layer on top of the
sharded model, never a second full copy:

* FSDP2 (DTensor parameters): ``full_tensor()`` on each entry of the state dict; a collective,
  every process iterates in the same order. Offloaded (host) shards are moved to the compute
  device first, so the gathered tensor lands where the engine reads it.
* FSDP1: ``summon_full_params(unit, recurse=False)`` per FSDP unit, children first (the
  post-order traversal TRL's colocate sync uses).
* DeepSpeed ZeRO-3 (parameters with ``ds_id``): ``deepspeed.zero.GatheredParameters`` over one
  module's own parameters at a time.
* anything else (one process, DDP, ZeRO-1/2): the state dict as it is.

Naming (``vllm_names``): the trainer loads a composite checkpoint's *text* model (the harness's
``hf_load.load_model``: Qwen3.5, Gemma 4 become ``Qwen3_5ForCausalLM`` / ``Gemma4ForCausalLM``
with weights ``model.*``), while vLLM builds the checkpoint's own multimodal class, whose
``hf_to_vllm_mapper`` reads the hub layout ``model.language_model.*`` (vLLM 0.32:
``Qwen3_5ForConditionalGeneration`` inherits Qwen3-VL's ``model.language_model.`` ->
``language_model.model.``, ``lm_head.`` -> ``language_model.lm_head.``, with no rule for a
bare ``model.layers.*``, so an unmapped sync fails; ``Gemma4ForConditionalGeneration`` also
takes ``model.language_model.*``). The map is chosen per architecture by the checkpoint's ``model_type``; a text
checkpoint (Llama, Qwen2/3, SmolLM2) keeps its names; an unknown composite is one clear error
instead of a sync that loads nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from trainers.harness import Registry

NameMap = Callable[[str], str]

# checkpoint model_type -> policy name -> engine name
NAME_MAPS: Registry[NameMap] = Registry("vLLM weight-name map")


def _text_into_composite(name: str) -> str:
    """A text model's ``model.X`` back under the composite's ``model.language_model.X`` (the
    inverse of hf_load.TEXT_PREFIX); the head and names already in the hub layout stay."""
    if name.startswith("model.") and not name.startswith(
        ("model.language_model.", "model.visual.")
    ):
        return "model.language_model." + name[len("model.") :]
    return name


for _arch in ("qwen3_5", "qwen3_5_moe", "gemma4", "gemma3", "gemma3n"):
    NAME_MAPS.register(_arch)(_text_into_composite)


def vllm_names(checkpoint_config: Mapping[str, Any]) -> NameMap:
    """The name map for the checkpoint vLLM was built from (its config.json as a dict)."""
    model_type = str(checkpoint_config.get("model_type", ""))
    if model_type in NAME_MAPS:
        return NAME_MAPS.get(model_type)
    if isinstance(checkpoint_config.get("text_config"), Mapping):
        raise ValueError(
            f"weight sync: {model_type or 'this'} checkpoint is multimodal (it has a "
            "text_config) and no name map is registered for it in "
            "trainers.engine.weight_sync.NAME_MAPS"
        )
    return lambda name: name  # a text checkpoint: the policy's names are the engine's


def layout(model: Any) -> str:
    """fsdp2 | fsdp1 | zero3 | plain: how ``model``'s parameters are held."""
    for p in model.parameters():
        if hasattr(p, "full_tensor"):
            return "fsdp2"
        if hasattr(p, "ds_id"):
            return "zero3"
        break
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        if any(isinstance(m, FSDP) for m in model.modules()):
            return "fsdp1"
    except ImportError:  # pragma: no cover
        pass
    return "plain"


def full_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    """(name, full tensor) for every entry of the policy's state, gathered one piece at a
    time (module docstring). Under a sharded layout this is a collective: every process must
    iterate it to the end."""
    kind = layout(model)
    if kind == "fsdp2":
        from trainers.engine.sharding import full_tensor

        for name, t in model.state_dict().items():
            yield name, full_tensor(t)  # offloaded shards gather on the compute device
    elif kind == "fsdp1":
        yield from _fsdp1(model, "", set())
    elif kind == "zero3":
        yield from _zero3(model)
    else:
        for name, t in model.state_dict().items():
            yield name, t.detach()


def _fsdp1(module: Any, prefix: str, seen: set[str]) -> Iterator[tuple[str, Any]]:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    for child_name, child in module.named_children():
        yield from _fsdp1(child, f"{prefix}.{child_name}" if prefix else child_name, seen)
    if isinstance(module, FSDP):
        with FSDP.summon_full_params(module, recurse=False, writeback=False):
            for pname, p in module.named_parameters():
                name = f"{prefix}.{pname}" if prefix else pname
                for wrapper in ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module."):
                    name = name.replace(wrapper, "")
                if name not in seen:
                    seen.add(name)
                    yield name, p.detach()


def _zero3(model: Any) -> Iterator[tuple[str, Any]]:
    import deepspeed

    for mod_name, module in model.named_modules():
        own = list(module.named_parameters(recurse=False))
        if not own:
            continue
        with deepspeed.zero.GatheredParameters([p for _, p in own], modifier_rank=None):
            for pname, p in own:
                yield (f"{mod_name}.{pname}" if mod_name else pname), p.detach()
