"""FSDP2 in two CPU processes (gloo, torchrun): the engine shards the policy itself, so the
sharded path is the one a GPU run takes (accelerate's FSDP plugin does nothing on the CPU)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests_paths import REPO, torchrun, toy_env

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.xdist_group("multiprocess"),  # one launch at a time (conftest.py)
]


def _torchrun(args: list[str], timeout: int = 300, ok: bool = True) -> subprocess.CompletedProcess:
    cmd = [*torchrun(), *args]
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
    _torchrun(
        [str(REPO / "tests" / "helpers" / "fsdp_probe.py"), str(out), str(model)], timeout=240
    )
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


def _toy_args(out: Path, model: Path, *extra: str) -> list[str]:
    """The toy task's command line (tests/helpers/toy_task.py): 3-row micro-batches, 3 tokens."""
    args = [str(REPO / "tests" / "helpers" / "toy_task.py"), str(out), "--model", str(model)]
    return [
        *args,
        "--set",
        "micro_batch_rows=3",
        "--set",
        "max_tokens=3",
        "--parity-reward",
        *extra,
    ]


def _toy(out: Path, model: Path, *extra: str, launcher: list[str] | None = None) -> None:
    args = _toy_args(out, model, *extra)
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


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory, toy_model: Path) -> Path:
    """Two toy steps in one unsharded process: the run every layout must equal."""
    one = tmp_path_factory.mktemp("plain") / "one"
    _toy(one, toy_model, "--steps", "2")
    return one


def _metrics(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def _same_run(a: Path, b: Path) -> None:
    """Equal weights (full shapes) and per-step grad and step norms."""
    wa, wb = _weights(a / "checkpoints" / "final"), _weights(b / "checkpoints" / "final")
    assert wa.keys() == wb.keys()
    for k in wa:
        assert wa[k].shape == wb[k].shape  # full tensors, not one process's shard
        torch.testing.assert_close(wa[k], wb[k], rtol=1e-5, atol=1e-6)
    for x, y in zip(_metrics(a), _metrics(b), strict=True):
        assert y["param_step_norm"] == pytest.approx(x["param_step_norm"], rel=1e-4)
        assert y["grad_norm"] == pytest.approx(x["grad_norm"], rel=1e-4)


def test_fsdp_training_matches_one_process_resumes_and_saves_a_plain_hf_folder(
    tmp_path: Path, toy_model: Path, plain_run: Path
) -> None:

    one, two, resumed = plain_run, tmp_path / "two", tmp_path / "resumed"
    _toy(two, toy_model, "--steps", "2", "--set", "sharding=fsdp2", launcher=["torchrun"])
    # weights and per-step diagnostics: the step norm is not counted once per process
    _same_run(one, two)
    a, base = _weights(one / "checkpoints" / "final"), _weights(toy_model)
    assert a.keys() == base.keys() and all(a[k].shape == base[k].shape for k in a)
    assert max(float((a[k] - base[k]).abs().max()) for k in a) > 1e-4
    # an FSDP checkpoint is a plain HF folder
    loaded, info = _with_info(two / "checkpoints" / "final", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert not any(hasattr(p, "full_tensor") for p in loaded.parameters())
    # the sharded state resumes: one step, then resume to two, equals two at once
    fsdp = ["--set", "sharding=fsdp2"]
    _toy(resumed, toy_model, "--steps", "1", *fsdp, launcher=["torchrun"])
    assert (resumed / "state" / "step-00000001" / "sharded_model.safetensors").is_file()
    _toy(resumed, toy_model, "--steps", "2", "--resume", *fsdp, launcher=["torchrun"])
    b, c = _weights(two / "checkpoints" / "final"), _weights(resumed / "checkpoints" / "final")
    for k in b:
        torch.testing.assert_close(c[k], b[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("slow_rank", [False, True])
def test_cppo_data_stages_run_on_the_main_process_only(tmp_path: Path, slow_rank: bool) -> None:
    """slow_rank: the second process decides late (as under load) whether a stage is done;
    the runner decided from live files, so it skipped the main process's fresh "rm" and its
    barrier, and the processes hung or died at the next one."""
    out = tmp_path / "stages"
    if slow_rank:
        os.environ["STAGES_PROBE_SLOW"] = "1"
    try:
        _torchrun([str(REPO / "tests" / "helpers" / "stages_probe.py"), str(out)], timeout=180)
    finally:
        os.environ.pop("STAGES_PROBE_SLOW", None)
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


FSDP2 = ("--set", "sharding=fsdp2")


def _failed_resume(out: Path, model: Path, *extra: str) -> str:
    """Resume to step 2 under torchrun, expecting every process to stop with its own
    DataError line; the timeout catches a hang (the split folder below hung before the
    processes agreed on the state); returns stderr."""
    args = _toy_args(out, model, *FSDP2, "--steps", "2", "--resume", *extra)
    proc = _torchrun(args, 120, ok=False)
    assert proc.returncode != 0, proc.stderr[-2000:]
    return proc.stderr


def test_a_resume_one_process_cannot_load_stops_every_process(
    tmp_path: Path, toy_model: Path
) -> None:

    base = tmp_path / "base"
    _torchrun(_toy_args(base, toy_model, *FSDP2, "--steps", "1"))
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


def _sharding(run: Path) -> dict:
    """The layout the run really had, read from its FSDP state (manifest.topology)."""
    return json.loads((run / "train_manifest.json").read_text())["topology"]["sharding"]


def test_offload_on_one_and_two_processes_matches_the_plain_run_and_resumes(
    tmp_path: Path, toy_model: Path, plain_run: Path
) -> None:

    offload = ["--set", "sharding=fsdp2_offload"]
    # one process: a 1-process mesh (the engine makes the gloo group and tears it down)
    one = tmp_path / "one"
    _toy(one, toy_model, "--steps", "2", *offload)
    assert _sharding(one) == {
        "fsdp2": True,
        "mesh_size": 1,
        "units": 3,  # two decoder layers and the root
        "offload": "cpu",
        "pinned": False,  # pinned memory only where CUDA is
        "param_dtype": "float32",  # no mixed precision asked for
    }
    _same_run(plain_run, one)
    # two processes, one step, then a resume from the offloaded sharded state to two steps
    two = tmp_path / "two"
    _toy(two, toy_model, "--steps", "1", *offload, launcher=["torchrun"])
    assert (two / "state" / "step-00000001" / "sharded_optimizer.safetensors").is_file()
    _toy(two, toy_model, "--steps", "2", "--resume", *offload, launcher=["torchrun"])
    assert _sharding(two)["mesh_size"] == 2 and _sharding(two)["offload"] == "cpu"
    _same_run(plain_run, two)
    loaded, info = _with_info(two / "checkpoints" / "final", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]


def test_offload_layout_and_process_group_in_process(toy_model: Path) -> None:
    import torch.distributed as dist

    from cppo_bench.backends.hf import load_model
    from trainers.engine import sharding

    assert sharding.uses_fsdp("fsdp2_offload", 1) and not sharding.uses_fsdp("fsdp2", 1)
    assert sharding.uses_fsdp("fsdp2", 2) and not sharding.wants_offload("fsdp2")
    assert not sharding.uses_fsdp("auto", 1) and not sharding.uses_fsdp("none", 2)
    assert not dist.is_initialized()
    with sharding.process_group("fsdp2_offload"):
        assert dist.is_initialized() and dist.get_world_size() == 1
        model, _, _ = load_model(str(toy_model), dtype=torch.float32)
        sharding.shard(model, "cpu", 1, offload=True)
        policies = sharding.offload_policies(model)
        assert len(policies) == 3
        assert all(isinstance(p, torch.distributed.fsdp.CPUOffloadPolicy) for p in policies)
        # the gradient norm reduced by hand equals torch's on the same (unsharded) gradients
        plain, _, _ = load_model(str(toy_model), dtype=torch.float32)
        ids = torch.tensor([[1, 2, 3, 4, 5]])
        for m in (model, plain):
            m(input_ids=ids).logits.float().pow(2).mean().backward()
        mine = sharding.clip_grad_norm(list(model.parameters()), 1e-3)
        ref = float(torch.nn.utils.clip_grad_norm_(plain.parameters(), 1e-3))
        assert mine == pytest.approx(ref, rel=1e-5)
        for p, q in zip(model.parameters(), plain.parameters(), strict=True):  # clipped alike
            torch.testing.assert_close(sharding.full_tensor(p.grad), q.grad, rtol=1e-5, atol=1e-8)
        assert sharding.full_state_dict(model).keys() == plain.state_dict().keys()
    assert not dist.is_initialized()  # torn down


def _with_info(path: Path, **kwargs: Any) -> tuple[Any, dict]:
    """(model, loading info): from_pretrained's output_loading_info form, which its own type
    hints do not describe."""
    from transformers import AutoModelForCausalLM

    out: Any = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    return out
