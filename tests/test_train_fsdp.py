"""FSDP2 in two CPU processes (gloo, torchrun): the engine shards the policy itself, so the
sharded path is the one a GPU run takes (accelerate's FSDP plugin does nothing on the CPU)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests_paths import REPO, toy_env

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun is absent")

_PORT = [29000 + os.getpid() % 500]


def _torchrun(args: list[str], timeout: int = 300, ok: bool = True) -> subprocess.CompletedProcess:
    _PORT[0] += 1  # a fresh rendezvous port per launch
    cmd = ["torchrun", "--nproc_per_node", "2", "--master_port", str(_PORT[0]), *args]
    proc = subprocess.run(
        cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=timeout
    )
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.mark.parametrize("family", ["llama", "qwen3_5"])
def test_sharded_parameters_sync_shapes_uneven_rollouts_and_update(
    family: str, tmp_path: Path
) -> None:
    from tiny_models import build

    model = build(family, tmp_path / family)
    out = tmp_path / "probe"
    # a hang (a collective one process never reaches) fails here through the timeout
    _torchrun([str(REPO / "tests" / "fsdp_probe.py"), str(out), str(model)], timeout=240)
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rec in ranks:
        assert rec["dtensor"] and rec["resharded"], rec  # really sharded, before and after
        assert rec["shapes_ok"] and not rec["missing"], rec  # full checkpoint shapes and names
        assert rec["same_as_unsharded"], rec  # generation under gathered == the plain model
        assert rec["grad"] and rec["update_matches_one_process"], rec
        # the LM head over chunks of 2 positions (recomputed in backward) under FSDP2: the
        # unchunked update's loss, grad norm and weights; the chunking really ran
        assert rec["chunked_matches_unchunked"] and rec["chunk_max_positions"] == 2, rec
        assert rec["chunk_head_calls"] >= 4, rec
    assert ranks[0]["lengths"] == [6, 6, 6] and ranks[1]["lengths"] == [2]  # uneven decoding


def _toy(out: Path, model: Path, *extra: str, launcher: list[str] | None = None) -> None:
    args = [
        str(REPO / "tests" / "toy_task.py"),
        str(out),
        "--model",
        str(model),
        "--set",
        "micro_batch_rows=3",
        "--set",
        "max_tokens=3",
        "--parity-reward",
        *extra,
    ]
    if launcher is None:
        proc = subprocess.run(
            [sys.executable, *args],
            cwd=REPO,
            env=toy_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    else:
        _torchrun(args)


def test_fsdp_training_matches_one_process_resumes_and_saves_a_plain_hf_folder(
    tmp_path: Path, toy_model: Path
) -> None:
    from transformers import AutoModelForCausalLM

    one, two, resumed = tmp_path / "one", tmp_path / "two", tmp_path / "resumed"
    _toy(one, toy_model, "--steps", "2")
    _toy(two, toy_model, "--steps", "2", "--set", "sharding=fsdp2", launcher=["torchrun"])
    a, b = _weights(one / "checkpoints" / "final"), _weights(two / "checkpoints" / "final")
    base = _weights(toy_model)
    assert a.keys() == b.keys() == base.keys()
    for k in a:
        assert a[k].shape == base[k].shape  # full tensors, not one process's shard
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6)
    assert max(float((a[k] - base[k]).abs().max()) for k in a) > 1e-4
    # the per-step diagnostics agree too: the step norm is not counted once per process
    m1 = [json.loads(x) for x in (one / "metrics.jsonl").read_text().splitlines()]
    m2 = [json.loads(x) for x in (two / "metrics.jsonl").read_text().splitlines()]
    for x, y in zip(m1, m2, strict=True):
        assert y["param_step_norm"] == pytest.approx(x["param_step_norm"], rel=1e-4)
        assert y["grad_norm"] == pytest.approx(x["grad_norm"], rel=1e-4)
    # an FSDP checkpoint is a plain HF folder
    loaded, info = AutoModelForCausalLM.from_pretrained(
        two / "checkpoints" / "final", output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert not any(hasattr(p, "full_tensor") for p in loaded.parameters())
    # the sharded state resumes: one step, then resume to two, equals two at once
    fsdp = ["--set", "sharding=fsdp2"]
    _toy(resumed, toy_model, "--steps", "1", *fsdp, launcher=["torchrun"])
    assert (resumed / "state" / "step-00000001" / "sharded_model.safetensors").is_file()
    _toy(resumed, toy_model, "--steps", "2", "--resume", *fsdp, launcher=["torchrun"])
    c = _weights(resumed / "checkpoints" / "final")
    for k in b:
        torch.testing.assert_close(c[k], b[k], rtol=1e-5, atol=1e-6)


def test_cppo_data_stages_run_on_the_main_process_only(tmp_path: Path) -> None:
    out = tmp_path / "stages"
    _torchrun([str(REPO / "tests" / "stages_probe.py"), str(out)], timeout=180)
    calls = sorted((out / "calls.txt").read_text().split("\n")[:-1])
    # sft and rm: one process wrote them; warmup (an engine run) runs on both
    assert calls == ["rm 0", "sft 0", "warmup 0", "warmup 1"]
    for r in (0, 1):
        assert json.loads((out / f"done{r}.json").read_text()) == {
            "sft": "ran",
            "rm": "ran",
            "warmup": "ran",
        }
    for stage in ("sft", "rm", "warmup"):
        manifest = json.loads((out / "pipe" / stage / "train_manifest.json").read_text())
        assert manifest["status"] == "complete"
    assert not (out / "pipe" / "sft" / "from_1.txt").exists()


def _toy_args(out: Path, model: Path, *extra: str) -> list[str]:
    return [
        str(REPO / "tests" / "toy_task.py"),
        str(out),
        "--model",
        str(model),
        "--set",
        "micro_batch_rows=3",
        "--set",
        "max_tokens=3",
        "--set",
        "sharding=fsdp2",
        "--parity-reward",
        *extra,
    ]


def _failed_resume(out: Path, model: Path, *extra: str) -> str:
    """Resume to step 2 under torchrun, expecting every process to stop with its own
    DataError line; the timeout catches a hang (the split folder below hung before the
    processes agreed on the state); returns stderr."""
    proc = _torchrun(_toy_args(out, model, "--steps", "2", "--resume", *extra), 120, ok=False)
    assert proc.returncode != 0, proc.stderr[-2000:]
    return proc.stderr


def test_a_resume_one_process_cannot_load_stops_every_process(
    tmp_path: Path, toy_model: Path
) -> None:
    import shutil

    base = tmp_path / "base"
    _torchrun(_toy_args(base, toy_model, "--steps", "1"))
    state = base / "state" / "step-00000001"
    assert (state / "sharded_model.safetensors").is_file()
    # only process 1's RNG file is bad: process 0 used to go on loading until torchrun's
    # agent killed it; now both stop with a line
    rng = tmp_path / "rng"
    shutil.copytree(base, rng)
    pkl = rng / "state" / "step-00000001" / "random_states_1.pkl"
    pkl.write_bytes(b"\x80\x05junk.".ljust(pkl.stat().st_size, b"."))  # same size
    err = _failed_resume(rng, toy_model)
    assert "random_states_1.pkl: the RNG state cannot be read" in err
    assert "process 1 cannot load the training state" in err  # process 0's line
    # the sharded weights, same size, garbled: only process 0 reads them now
    bad = tmp_path / "bad"
    shutil.copytree(base, bad)
    weights = bad / "state" / "step-00000001" / "sharded_model.safetensors"
    weights.write_bytes(b"\xff" * weights.stat().st_size)
    err = _failed_resume(bad, toy_model)
    assert "the training state cannot be loaded" in err
    assert "process 0 cannot load the training state" in err  # process 1's line
    # no shared file system: process 1's folder has no state, process 0's has step 1
    split = tmp_path / "split"
    shutil.copytree(base, split / "r0")
    (split / "r1").mkdir()
    err = _failed_resume(split, toy_model, "--rank-out")
    assert "the processes see different training states" in err
    assert "process 0: step-00000001, process 1: none" in err
