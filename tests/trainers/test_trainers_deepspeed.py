"""DeepSpeed ZeRO-2 / ZeRO-3 through the engine, 2 CPU processes (DeepSpeed's CPU accelerator,
gloo), launched as a user would: ``accelerate launch --config_file zero3.yaml``. Skipped
without DeepSpeed. The README's test command builds its venv (`bash .ci/setup --venvs`: over
the main environment's packages, through a .pth file, plus ``pip install deepspeed==0.19.8``);
g++ is needed: DeepSpeed JIT-builds its shm communication op on
first use, ~30 s here, cached under ~/.cache/torch_extensions. ``DEEPSPEED_PYTHON`` names
another interpreter (a hand-made /tmp/dsvenv is still found); the current one is used when
it imports deepspeed itself."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests_paths import REPO, accelerate_launch, toy_env, venv_python

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

torch = pytest.importorskip("torch")

VENV = venv_python("deepspeed", "DEEPSPEED_PYTHON", "/tmp/dsvenv/bin/python")

ZERO_YAML = """compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: {stage}
  zero3_init_flag: {init}
  gradient_accumulation_steps: 1
  offload_optimizer_device: none
  offload_param_device: none
num_machines: 1
num_processes: 2
mixed_precision: "no"
"""


@functools.lru_cache(maxsize=1)
def _python() -> str | None:
    """An interpreter that imports deepspeed and accelerate (imports for real: a broken build
    fails here, not in the middle of a launch)."""
    for python in (sys.executable, str(VENV)):
        if Path(python).is_file():
            probe = [python, "-c", "import deepspeed, accelerate"]
            if subprocess.run(probe, capture_output=True, timeout=120).returncode == 0:
                return python
    return None


def _needs_deepspeed() -> str:
    python = _python()
    if python is None:
        pytest.skip(f"DeepSpeed is not importable here nor at {VENV} (see the module docstring)")
    return python


def _config(tmp: Path, stage: int) -> Path:
    path = tmp / f"zero{stage}.yaml"
    # ZeRO-3 with zero.Init: the policy is partitioned while every process loads it
    path.write_text(ZERO_YAML.format(stage=stage, init=str(stage == 3).lower()))
    return path


def _launch(
    config: Path | None, args: list[str], timeout: int = 300, ok: bool = True
) -> subprocess.CompletedProcess:
    python = _needs_deepspeed()
    if config is None:  # one plain process, the reference layout
        cmd = [sys.executable, *args]
    else:
        cmd = [*accelerate_launch(python, config), *args]
    proc = subprocess.run(
        cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=timeout
    )
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


class _Gadget:
    """Unpickling it creates a file: what a planted state would do with a shell command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (Path.touch, (self.marker,))


def _plant(state: Path, victim: Path, marker: Path) -> None:
    """Replace ``victim`` with a gadget pickle and fix the artifact manifest's size for it,
    as a stranger handing over a state folder would."""
    torch.save({"state": _Gadget(marker)}, victim)
    manifest = json.loads((state / "artifact.json").read_text())
    manifest["files"][str(victim.relative_to(state))] = victim.stat().st_size
    (state / "artifact.json").write_text(json.dumps(manifest))


def test_deepspeed_state_pickles_are_read_restricted_first(tmp_path: Path) -> None:
    """The check a DeepSpeed resume runs before DeepSpeed unpickles its files (no DeepSpeed
    needed): tensors pass; a gadget is refused in one line naming it, and nothing runs; a
    class outside the known ones is admitted only through trusted_state_globals."""
    from fractions import Fraction

    from cppo_bench.errors import DataError
    from trainers.engine.deepspeed_support import check_state_pickles

    state = tmp_path / "state"
    (state / "pytorch_model").mkdir(parents=True)
    torch.save({"w": torch.ones(3), "step": 2}, state / "pytorch_model" / "a_model_states.pt")
    check_state_pickles(state)
    marker = tmp_path / "ran"
    torch.save({"x": _Gadget(marker)}, state / "pytorch_model" / "b_optim_states.pt")
    with pytest.raises(DataError, match=r"b_optim_states.pt: holds \w+.*refused"):
        check_state_pickles(state)
    assert not marker.exists()
    (state / "pytorch_model" / "b_optim_states.pt").unlink()
    torch.save({"lr": Fraction(1, 3)}, state / "pytorch_model" / "c_optim_states.pt")
    with pytest.raises(DataError, match="holds fractions.Fraction"):
        check_state_pickles(state)
    check_state_pickles(state, trusted="fractions.Fraction")
    (state / "pytorch_model" / "d.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(DataError, match="d.pt: not a readable DeepSpeed state"):
        check_state_pickles(state, trusted="fractions.Fraction")


@pytest.mark.slow  # minutes: two DeepSpeed processes, JIT-built ops on first use
def test_zero3_partitions_decodes_unevenly_and_pads_the_update(tmp_path: Path) -> None:
    from tiny_models import build

    _needs_deepspeed()
    model = build("llama", tmp_path / "llama")
    out = tmp_path / "probe"
    # a hang (a collective one process never reaches) fails here through the timeout
    _launch(
        _config(tmp_path, 3),
        [str(REPO / "tests" / "helpers" / "ds_probe.py"), str(out), str(model)],
    )
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rec in ranks:
        # DeepSpeed really ran (accelerate falls back to DDP under cpu=True without a word)
        assert rec["distributed_type"] == "DEEPSPEED" and rec["zero_stage"] == 3, rec
        assert rec["partitioned"] and rec["shapes_ok"], rec
        assert rec["bf16_reference"] == ["torch.bfloat16"], rec
        assert rec["same_as_unsharded"], rec  # generation under gathered == the plain model
        assert rec["update_matches_one_process"], rec  # 5 rows against 1, reference included
    assert ranks[0]["lengths"] == [6, 6, 6] and ranks[1]["lengths"] == [2]  # uneven decoding


def _toy(out: Path, model: Path, config: Path | None, *extra: str) -> None:
    args = [str(REPO / "tests" / "helpers" / "toy_task.py"), str(out), "--model", str(model)]
    args += ["--set", "micro_batch_rows=3", "--set", "max_tokens=3", "--parity-reward"]
    # a small clip norm: DeepSpeed's own clipping (gradient_clipping) takes part
    _launch(config, [*args, "--set", "max_grad_norm=0.05", *extra])


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _metrics(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_zero2_and_zero3_training_match_one_process_resume_and_save_plain_hf(
    tmp_path: Path, toy_model: Path
) -> None:

    _needs_deepspeed()
    one = tmp_path / "one"
    _toy(one, toy_model, None, "--steps", "2")
    a, base = _weights(one / "checkpoints" / "final"), _weights(toy_model)
    assert max(float((a[k] - base[k]).abs().max()) for k in a) > 1e-4
    for stage in (2, 3):
        config = _config(tmp_path, stage)
        two = tmp_path / f"zero{stage}"
        _toy(two, toy_model, config, "--steps", "2")
        manifest = json.loads((two / "train_manifest.json").read_text())
        assert manifest["topology"]["zero_stage"] == stage, manifest["topology"]
        assert manifest["topology"]["distributed_type"] == "DEEPSPEED"
        b = _weights(two / "checkpoints" / "final")
        assert a.keys() == b.keys() == base.keys()
        for k in a:
            assert b[k].shape == base[k].shape and b[k].dtype == torch.float32
            torch.testing.assert_close(b[k], a[k], rtol=1e-5, atol=1e-6)
        # the step norm counts ZeRO-3 partitions once each, ZeRO-2 replicas once in all;
        # kl > 0 at step 2: the ZeRO-3 reference (its own DeepSpeed engine) took part
        for x, y in zip(_metrics(one), _metrics(two), strict=True):
            for key in ("param_step_norm", "grad_norm", "kl", "loss"):
                assert y[key] == pytest.approx(x[key], rel=1e-4, abs=1e-9), (stage, key)
        assert _metrics(two)[-1]["kl"] > 0
        loaded, info = _with_info(two / "checkpoints" / "final", output_loading_info=True)
        assert not info["missing_keys"] and not info["unexpected_keys"]
        assert not any(hasattr(p, "ds_id") for p in loaded.parameters())
    # DeepSpeed's own state (per-rank partitions) resumes: one step, then two, equals two
    resumed, config = tmp_path / "resumed", _config(tmp_path, 3)
    _toy(resumed, toy_model, config, "--steps", "1")
    assert list((resumed / "state" / "step-00000001").glob("pytorch_model/*optim_states.pt"))
    _toy(resumed, toy_model, config, "--steps", "2", "--resume")
    c = _weights(resumed / "checkpoints" / "final")
    for k in a:
        torch.testing.assert_close(c[k], a[k], rtol=1e-5, atol=1e-6)
    # a stranger's state: a gadget in place of a partition (its manifest fixed to match) is
    # refused before DeepSpeed unpickles anything; nothing runs
    import shutil

    planted, marker = tmp_path / "planted", tmp_path / "ran"
    shutil.copytree(resumed, planted)
    state = planted / "state" / "step-00000002"
    _plant(state, next(state.glob("pytorch_model/*optim_states.pt")), marker)
    args = [
        str(REPO / "tests" / "helpers" / "toy_task.py"),
        str(planted),
        "--model",
        str(toy_model),
    ]
    args += ["--set", "micro_batch_rows=3", "--set", "max_tokens=3", "--parity-reward"]
    # the run's own settings: a resume that changes one is refused before any state is read
    args += ["--set", "max_grad_norm=0.05"]
    proc = _launch(config, [*args, "--steps", "3", "--resume"], ok=False)
    assert proc.returncode != 0 and not marker.exists()
    assert "optim_states.pt: holds" in proc.stderr and "refused" in proc.stderr


def test_a_deepspeed_launch_without_cuda_does_not_ask_accelerate_for_the_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """accelerate ignores a DeepSpeed launch under cpu=True and runs DDP (runs in CI: no
    DeepSpeed needed)."""
    from trainers.engine.deepspeed_support import accelerator_kwargs, state_kwargs

    monkeypatch.delenv("ACCELERATE_USE_DEEPSPEED", raising=False)
    assert accelerator_kwargs(cuda=False) == {"cpu": True}  # plain run, torchrun: gloo DDP
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    assert accelerator_kwargs(cuda=True) == {"cpu": False}
    kwargs = accelerator_kwargs(cuda=False)
    assert kwargs["cpu"] is False
    assert [h.backend for h in kwargs["kwargs_handlers"]] == ["gloo"]
    # the CPPO pipeline's PartialState (built before the engine's) is told the same
    assert state_kwargs(cuda=False) == {"cpu": False, "backend": "gloo"}


def _with_info(path: Path, **kwargs: Any) -> tuple[Any, dict]:
    """(model, loading info): from_pretrained's output_loading_info form, which its own type
    hints do not describe."""
    from transformers import AutoModelForCausalLM

    out: Any = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    return out
