"""Run under ``torchrun --nproc_per_node 2`` (gloo, CPU): checks of the engine's FSDP2 path
that a training run does not show on its own. Each process writes ``OUT/rank{R}.json``.

``python tests/helpers/fsdp_probe.py OUT MODEL_DIR``: MODEL_DIR is a tiny checkpoint (tests/helpers/tiny_models).
Checks: every parameter is a DTensor after ``sharding.shard``; the weights the sync gathers
have the checkpoint's full shapes (after the per-architecture name map); hf rollouts with a
different number of requests and decoding steps per process finish (no hang) and equal what
an unsharded copy generates; a training forward/backward still runs after generation (the
units were resharded); an update with the LM head chunked (``logits_chunk_tokens``, at most 2
positions per head call, recomputed in the backward) equals the unchunked update on sharded
models (loss, grad norm, weights), padding micro-batch included.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from train_helpers import (  # noqa: E402 - the script's folder is on sys.path
    all_reduce_copy,
    one_process_accelerator,
    uneven_generation,
)


def main() -> None:
    import torch
    from accelerate import Accelerator
    from safetensors import safe_open

    from cppo_bench.backends.hf import load_model
    from trainers.engine import sharding, weight_sync

    out, model_dir = Path(sys.argv[1]), Path(sys.argv[2])
    acc = Accelerator(cpu=True)
    rank, world = acc.process_index, acc.num_processes
    model, tok, _ = load_model(str(model_dir), dtype=torch.float32)
    plain, _, _ = load_model(str(model_dir), dtype=torch.float32)
    model.config.use_cache = False
    sharding.shard(model, acc.device, world)
    dtensor = all(hasattr(p, "full_tensor") for p in model.parameters())

    # the sync's view: full tensors under the names of the checkpoint vLLM would load
    names = weight_sync.vllm_names(json.loads((model_dir / "config.json").read_text()))
    with safe_open(str(model_dir / "model.safetensors"), "pt") as f:
        disk = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
    gathered = {names(k): tuple(t.shape) for k, t in weight_sync.full_tensors(model)}
    shapes_ok = all(disk.get(k) == v for k, v in gathered.items())
    missing = sorted(k for k in gathered if k not in disk)

    # uneven work: processes decode different numbers of steps (no hang) under gathered
    uneven = uneven_generation(model, plain, tok, rank)

    # the units were resharded: a training forward/backward still runs (a collective)
    ids = torch.tensor([[1, 2, 3, 4]])
    loss = model(input_ids=ids).logits.float().mean()
    loss.backward()
    resharded = all(hasattr(p, "full_tensor") for p in model.parameters())
    grads = all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=True)
    update_ok = uneven_update_matches(acc, model, plain, rank, world)
    chunked = chunked_update_matches(acc, model_dir, rank, world)
    record = {
        **chunked,
        "update_matches_one_process": update_ok,
        "dtensor": dtensor,
        "shapes_ok": shapes_ok,
        "missing": missing[:5],
        "n_gathered": len(gathered),
        **uneven,
        "resharded": resharded,
        "grad": grads,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{rank}.json").write_text(json.dumps(record))
    acc.wait_for_everyone()


def _sgd_update(
    acc: Any, model: Any, rows: list, cfg: Any, max_grad_norm: float, reduce: Any
) -> Any:
    """One policy update with plain SGD (lr 1: the step is the gradient itself, so layouts
    agree to round-off; Adam would blow round-off in near-zero gradients up to whole steps)."""
    import torch

    from trainers.engine.update import policy_update

    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    return policy_update(
        acc,
        model,
        None,
        opt,
        rows,
        loss_config=cfg,
        micro_rows=2,
        pad_id=0,
        max_grad_norm=max_grad_norm,
        all_reduce_sum=reduce,
    )


def uneven_update_matches(acc: Any, model: Any, plain: Any, rank: int, world: int) -> bool:
    """One policy update with 5 rows on rank 0 and 1 on rank 1 (micro-batches of 2: three
    forwards against one) equals one process updating on all 6 rows."""

    import torch

    from trainers.core.batch import Region, Row
    from trainers.core.loss import LossConfig
    from trainers.engine import sharding

    rows = [
        Row.prompt_completion([1, 2, 3 + i], [4 + i, 5, 6 + (i % 3)], Region.RESPONSE, i - 2.5)
        for i in range(6)
    ]
    mine = rows[:5] if rank == 0 else rows[5:]
    cfg = LossConfig(beta=0.0, aggregation="sequence-mean", temperature=1.0)

    before = {k: v.clone() for k, v in plain.state_dict().items()}
    _sgd_update(acc, model, mine, cfg, 1.0, all_reduce_copy)
    one = one_process_accelerator()
    _sgd_update(one, plain, rows, cfg, 1.0, lambda t: t)
    full = sharding.full_state_dict(model)
    if rank != 0:
        return True
    ref = plain.state_dict()
    close = all(torch.allclose(full[k], ref[k], rtol=1e-4, atol=1e-6) for k in full)
    moved = max(float((full[k] - before[k]).abs().max()) for k in full)
    return close and moved > 1e-4  # the step really changed the weights


def chunked_update_matches(acc: Any, model_dir: Path, rank: int, world: int) -> dict:
    """Two freshly sharded copies take one SGD update on the same uneven rows (rank 0: 3 rows,
    2 micro-batches; rank 1: 1 row, then a padding micro-batch), one with the head chunked
    2 positions at a time, one unchunked: same loss, grad norm and weights."""
    import torch

    from cppo_bench.backends.hf import load_model
    from trainers.core import chunked_logprobs
    from trainers.core.batch import Region, Row
    from trainers.core.loss import LossConfig
    from trainers.engine import sharding

    rows = [
        Row.prompt_completion([1, 2, 3 + i], [4 + i, 5, 6, 7 + i, 8][: 3 + i], Region.RESPONSE, a)
        for i, a in enumerate((1.0, -0.5, 2.0, -1.5))
    ]
    mine = rows[:3] if rank == 0 else rows[3:]
    sizes: list[int] = []
    real = chunked_logprobs._chunk_logprobs

    def spy(head_fn, hidden, *args):  # noqa: ANN001, ANN202 - every head call, backward too
        sizes.append(int(hidden.shape[0]))
        return real(head_fn, hidden, *args)

    got = {}
    for chunk in (0, 2):
        model, _, _ = load_model(str(model_dir), dtype=torch.float32)
        model.config.use_cache = False
        sharding.shard(model, acc.device, world)
        cfg = LossConfig(beta=0.0, temperature=0.7, logits_chunk_tokens=chunk)
        chunked_logprobs._chunk_logprobs = spy if chunk else real
        try:  # max_grad_norm 0: no clip, the step is the raw gradient
            res = _sgd_update(acc, model, mine, cfg, 0.0, all_reduce_copy)
        finally:
            chunked_logprobs._chunk_logprobs = real
        got[chunk] = (res.loss["loss"], res.grad_norm, sharding.full_state_dict(model))
    (l0, n0, w0), (l2, n2, w2) = got[0], got[2]
    same = abs(l2 - l0) <= 1e-5 * abs(l0) and abs(n2 - n0) <= 1e-4 * n0
    if rank == 0:  # the full state dict lands on rank 0
        same = same and all(torch.allclose(w2[k], w0[k], rtol=1e-4, atol=1e-6) for k in w0)
    return {
        "chunked_matches_unchunked": same,
        "chunk_max_positions": max(sizes, default=0),
        "chunk_head_calls": len(sizes),
        "chunk_loss": [l0, l2],
    }


if __name__ == "__main__":
    main()
