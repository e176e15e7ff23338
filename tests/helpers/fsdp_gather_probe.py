"""Run under ``torchrun --nproc_per_node 2`` (gloo, CPU): the all-gathers of a training
backward, counted before and after a ``sharding.gathered`` block (a rollout), and after a
block that ran before the model's first forward. ``python tests/helpers/fsdp_gather_probe.py OUT
MODEL_DIR`` writes OUT/rank{R}.json: {"layers", "first", "after", "first_rolled"}."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> None:
    import torch
    import torch.distributed as dist

    from cppo_bench.backends.hf import load_model
    from trainers.engine import sharding

    out, model_dir = Path(sys.argv[1]), Path(sys.argv[2])
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    gathers = [0]
    # FSDP2's all-gather: torch 2.13 calls all_gather_single, 2.11 all_gather_into_tensor
    name = "all_gather_single" if hasattr(dist, "all_gather_single") else "all_gather_into_tensor"
    real = getattr(dist, name)

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        gathers[0] += 1
        return real(*args, **kwargs)

    setattr(dist, name, counting)  # FSDP2 looks it up on the module at call time
    ids = torch.tensor([[1, 2, 3, 4, 5]])

    def sharded() -> Any:  # (a transformers model, sharded: its own attributes)
        model, _, _ = load_model(str(model_dir), dtype=torch.float32)
        model.config.use_cache = False
        return sharding.shard(model, "cpu", world)

    def backward_gathers(model: torch.nn.Module) -> int:
        loss = model(input_ids=ids).logits.float().mean()
        gathers[0] = 0
        loss.backward()
        model.zero_grad(set_to_none=True)
        return gathers[0]

    def rollout(model: torch.nn.Module) -> None:
        with torch.no_grad(), sharding.gathered(model):
            model(input_ids=ids)

    model = sharded()
    first = backward_gathers(model)
    rollout(model)
    after = backward_gathers(model)
    fresh = sharded()  # a rollout before the first training forward (the root's lazy init)
    rollout(fresh)
    first_rolled = backward_gathers(fresh)
    result = {
        "layers": len(model.model.layers),
        "first": first,
        "after": after,
        "first_rolled": first_rolled,
    }
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
