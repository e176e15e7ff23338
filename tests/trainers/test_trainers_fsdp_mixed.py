"""accelerate's mixed precision reaches the FSDP2 layout the engine applies itself.

accelerate applies ``--mixed_precision bf16`` to the models it prepares (DDP, DeepSpeed); the
engine shards FSDP2 itself and never handed it on, so an FSDP2 run asked for bf16 computed in
fp32 (issue 43 item 6). The engine now gives every unit FSDP2's ``MixedPrecisionPolicy`` (bf16
compute over fp32 weights, gradients reduced in fp32), and the manifest's
``topology.sharding.param_dtype`` reads what FSDP2 applies from its own state. Launched as a
user would (torchrun; ``accelerate launch --mixed_precision bf16`` sets the same variable)."""

from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import pytest
from tests_paths import REPO, torchrun, toy_env

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)


@pytest.mark.parametrize("mixed", ["bf16", "no"])
def test_fsdp2_computes_in_the_launchs_mixed_precision(
    mixed: str, tmp_path: Path, toy_model: Path
) -> None:
    env = toy_env()
    env["ACCELERATE_MIXED_PRECISION"] = mixed  # what accelerate launch --mixed_precision sets
    out = tmp_path / "run"
    args = [str(REPO / "tests" / "helpers" / "toy_task.py"), str(out), "--model", str(toy_model)]
    args += ["--steps", "1", "--set", "sharding=fsdp2", "--set", "max_tokens=2"]
    proc = subprocess.run(
        [*torchrun(), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    topology = json.loads((out / "train_manifest.json").read_text())["topology"]
    assert topology["mixed_precision"] == mixed
    want = "bfloat16" if mixed == "bf16" else "float32"
    assert topology["sharding"]["fsdp2"] and topology["sharding"]["param_dtype"] == want
    step = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert step["grad_norm"] is not None and step["loss"] is not None  # finite: trained


def test_fp16_under_the_engines_fsdp2_is_one_line() -> None:
    from trainers.engine.setup import mixed_precision

    assert mixed_precision(types.SimpleNamespace(mixed_precision="no")) is None
    bf16 = mixed_precision(types.SimpleNamespace(mixed_precision="bf16"))
    assert bf16.param_dtype == torch.bfloat16 and bf16.reduce_dtype == torch.float32
    with pytest.raises(ValueError, match=r"^mixed precision fp16: the engine's FSDP2 layout"):
        mixed_precision(types.SimpleNamespace(mixed_precision="fp16"))
