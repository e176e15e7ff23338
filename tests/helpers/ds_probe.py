"""Run under ``accelerate launch --config_file zero3.yaml`` (2 CPU processes, gloo): checks of
the engine's DeepSpeed ZeRO-3 path that a training run does not show on its own. Each
process writes ``OUT/rank{R}.json``.

``python tests/helpers/ds_probe.py OUT MODEL_DIR``: MODEL_DIR is a tiny checkpoint (tests/helpers/tiny_models).
Checks: accelerate really runs DeepSpeed (not DDP, which it silently falls back to under
``cpu=True``) and the parameters are partitioned; hf rollouts with a different number of
requests and decoding steps per process finish (no hang) under ``sharding.gathered`` and
equal an unpartitioned copy; one policy update with 5 rows on one process and 1 on the
other, through the ZeRO-3 reference, equals one process on all 6 rows; the gathered weights
have the checkpoint's full shapes; a bf16 reference is partitioned in bf16.
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

    from cppo_bench.backends.hf import load_model
    from trainers.engine import deepspeed_support, sharding, weight_sync

    out, model_dir = Path(sys.argv[1]), Path(sys.argv[2])
    # a plain, whole copy: loaded before the Accelerator turns transformers' zero.Init on
    plain, _, _ = load_model(str(model_dir), dtype=torch.float32)
    acc = Accelerator(**deepspeed_support.accelerator_kwargs(torch.cuda.is_available()))
    rank = acc.process_index
    model, tok, _ = load_model(str(model_dir), dtype=torch.float32)  # under zero.Init
    model.config.use_cache = False
    plugin = acc.state.deepspeed_plugin
    plugin.deepspeed_config["zero_allow_untested_optimizer"] = True  # SGD: see _update
    deepspeed_support.fill_config(acc, 2, 0.0)
    engine, opt = acc.prepare(model, torch.optim.SGD(model.parameters(), lr=1.0))
    policy = acc.unwrap_model(engine)
    full = sum(p.ds_numel for p in policy.parameters()) if sharding.is_zero3(policy) else 0
    mine = sum(p.ds_tensor.numel() for p in policy.parameters()) if full else 0

    # uneven work: processes decode different numbers of steps (no hang) under gathered
    uneven = uneven_generation(policy, plain, tok, rank)

    reference = deepspeed_support.reference(str(model_dir), torch.float32, acc)
    update_ok = _update(acc, engine, opt, reference, plain, rank)
    shapes = {k: tuple(t.shape) for k, t in weight_sync.full_tensors(policy)}
    # reference_dtype bfloat16: partitioned in bf16 (it was cast back to the config's fp32)
    bf16 = deepspeed_support.reference(str(model_dir), torch.bfloat16, acc)
    bf16_dtypes = sorted({str(p.ds_tensor.dtype) for p in bf16.module.parameters()})
    record = {
        "distributed_type": acc.distributed_type.name,
        "zero_stage": deepspeed_support.zero_stage(acc),
        "partitioned": 0 < mine < full,
        **uneven,
        "update_matches_one_process": update_ok,
        "shapes_ok": shapes == {k: tuple(v.shape) for k, v in plain.state_dict().items()},
        "bf16_reference": bf16_dtypes,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{rank}.json").write_text(json.dumps(record))
    acc.wait_for_everyone()


def _update(acc: Any, engine: Any, opt: Any, reference: Any, plain: Any, rank: int) -> bool:
    """One policy update with 5 rows on rank 0 and 1 on rank 1 (micro-batches of 2: three
    forwards against one, the reference's too) equals one process updating on all 6 rows.
    SGD: the step is the gradient itself (Adam would blow round-off up to whole steps)."""
    import torch

    from trainers.core.batch import Region, Row
    from trainers.core.grpo import make_reference
    from trainers.core.loss import LossConfig
    from trainers.engine import weight_sync
    from trainers.engine.update import policy_update

    rows = [
        Row.prompt_completion([1, 2, 3 + i], [4 + i, 5, 6 + (i % 3)], Region.RESPONSE, i - 2.5)
        for i in range(6)
    ]
    cfg = LossConfig(beta=0.5, aggregation="sequence-mean", temperature=1.0)

    before = {k: v.clone() for k, v in plain.state_dict().items()}
    common: dict[str, Any] = {
        "loss_config": cfg,
        "micro_rows": 2,
        "pad_id": 0,
        "max_grad_norm": 0.0,
    }
    mine = rows[:5] if rank == 0 else rows[5:]
    policy_update(acc, engine, reference, opt, mine, all_reduce_sum=all_reduce_copy, **common)
    one = one_process_accelerator()
    ref1 = make_reference(plain, torch.float32)
    opt1 = torch.optim.SGD(plain.parameters(), lr=1.0)
    policy_update(one, plain, ref1, opt1, rows, all_reduce_sum=lambda t: t, **common)
    got = {k: t.detach().clone() for k, t in weight_sync.full_tensors(acc.unwrap_model(engine))}
    want = plain.state_dict()
    close = all(torch.allclose(got[k], want[k], rtol=1e-4, atol=1e-6) for k in want)
    moved = max(float((want[k] - before[k]).abs().max()) for k in want)
    return close and moved > 1e-4  # the step really changed the weights


if __name__ == "__main__":
    main()
