"""Exactly one optimizer step (and one scheduler step) per global step, whatever the number of
micro-batches: through the engine's own counters on the layouts that run here, and through
accelerate's DeepSpeed backward contract (a fake engine that steps as accelerate 1.15's
DeepSpeedEngineWrapper.backward does: whenever sync_gradients is true)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch  # noqa: E402  (a dependency: never skipped)


def test_counters_after_two_steps_of_several_micro_batches(tmp_path: Path, toy_model) -> None:  # noqa: ANN001
    from toy_task import run

    out = tmp_path / "run"
    # 2 prompts x 8 samples = 16 rows a step in micro-batches of 3: six backwards per step
    run(out, toy_model, steps=2, micro_batch_rows=3, parity_reward=True)
    state = out / "state" / "step-00000002"
    optim = torch.load(state / "optimizer.bin", weights_only=True)
    steps = {float(s["step"]) for s in optim["state"].values()}
    assert steps == {2.0}  # AdamW's own count: one step per global step, not per micro-batch
    sched = torch.load(state / "scheduler.bin", weights_only=True)
    assert sched["last_epoch"] == 2 and sched["_step_count"] == 3  # 1 at construction + 2


class _FakeDeepSpeedAccelerator:
    """accelerate under DeepSpeed, as read: backward() runs engine.backward and, when
    sync_gradients is true, engine.step() (optimizer + scheduler + zero_grad)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.distributed_type = types.SimpleNamespace(name="DEEPSPEED")
        self.device = torch.device("cpu")
        self.num_processes = 1
        self.sync_gradients = True
        self.engine_steps = 0
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.gradient_state = types.SimpleNamespace(_set_sync_gradients=self._set)
        self.state = types.SimpleNamespace(
            deepspeed_plugin=types.SimpleNamespace(
                deepspeed_config={
                    "train_micro_batch_size_per_gpu": "auto",
                    "gradient_accumulation_steps": "auto",
                    "gradient_clipping": "auto",
                    "zero_optimization": {"stage": 3},
                }
            )
        )

    def _set(self, value: bool) -> None:
        self.sync_gradients = value

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()
        if self.sync_gradients:
            self.opt.step()
            self.opt.zero_grad()
            self.engine_steps += 1

    def no_sync(self, model: object):  # noqa: ANN201
        import contextlib

        return contextlib.nullcontext()

    def clip_grad_norm_(self, params: object, max_norm: float) -> torch.Tensor:
        return torch.tensor(0.0)  # DeepSpeed clips inside engine.step


def test_deepspeed_backward_steps_the_engine_once_per_update(tmp_path: Path, toy_model) -> None:  # noqa: ANN001
    from transformers import AutoModelForCausalLM

    from trainers.core.batch import Region, Row
    from trainers.core.loss import LossConfig
    from trainers.engine import deepspeed_support
    from trainers.engine.update import policy_update

    model = AutoModelForCausalLM.from_pretrained(toy_model)
    acc = _FakeDeepSpeedAccelerator(model)
    deepspeed_support.fill_config(acc, micro_batch_rows=2, max_grad_norm=1.0)
    ds = acc.state.deepspeed_plugin.deepspeed_config
    assert ds["train_micro_batch_size_per_gpu"] == 2  # prepare() would raise on "auto"
    assert ds["gradient_accumulation_steps"] == 1 and ds["gradient_clipping"] == 1.0
    assert deepspeed_support.zero_stage(acc) == 3
    rows = [
        Row.prompt_completion([3, 4], [5 + i, 6], Region.RESPONSE, float(i) - 2.5) for i in range(6)
    ]
    snapshots: list[torch.Tensor] = []
    first = next(model.parameters())
    policy_update(
        acc,
        model,
        None,
        types.SimpleNamespace(step=lambda: None, zero_grad=lambda set_to_none=True: None),
        rows,
        loss_config=LossConfig(beta=0.0),
        micro_rows=2,
        pad_id=0,
        max_grad_norm=1.0,
        all_reduce_sum=lambda t: t,
        on_before_step=lambda: snapshots.append(first.detach().clone()),
    )
    assert acc.engine_steps == 1  # three micro-batches, one engine step
    assert acc.sync_gradients is True  # left as accelerate expects it
    # the step-norm snapshot predates the engine's step (taken before the first backward)
    assert len(snapshots) == 1 and not torch.equal(snapshots[0], first.detach())


def test_gradient_checkpointing_recomputes_every_layer_in_backward_and_takes_the_same_step(
    tmp_path: Path,
    toy_model,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted, not assumed: the forwards of each decoder layer's MLP with autograd on (the
    update's; rollouts and scoring run without it; the MLP, not the layer: transformers 5.24
    wraps the layer's own forward for checkpointing). Checkpointed, every one runs again in backward, so
    the count doubles. The old engine left the policy in eval mode, where transformers skips
    checkpointing: the counts were equal (issue 35 item 1)."""
    from safetensors.torch import load_file
    from toy_task import run
    from transformers.models.llama.modeling_llama import LlamaMLP

    grad_forwards = [0]
    real = LlamaMLP.forward

    def counting(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if torch.is_grad_enabled():
            grad_forwards[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LlamaMLP, "forward", counting)
    plain, ckpt = tmp_path / "plain", tmp_path / "ckpt"
    run(plain, toy_model, steps=1, parity_reward=True)
    plain_count, grad_forwards[0] = grad_forwards[0], 0
    run(ckpt, toy_model, steps=1, parity_reward=True, gradient_checkpointing=True)
    assert plain_count > 0 and grad_forwards[0] == 2 * plain_count
    a = load_file(str(plain / "checkpoints" / "final" / "model.safetensors"))
    b = load_file(str(ckpt / "checkpoints" / "final" / "model.safetensors"))
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6)


def test_the_update_runs_in_training_mode_without_dropout_and_restores_eval() -> None:
    """Training mode for the update only; dropout (modules and HF's attention_dropout) off,
    so a training-mode forward gives the eval-mode log-probs the rollouts were scored with."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from trainers.engine.update import disable_dropout, training_mode

    cfg = LlamaConfig(
        vocab_size=32, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, attention_dropout=0.9,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    layer = model.model.layers[0]
    layer.mlp = torch.nn.Sequential(layer.mlp, torch.nn.Dropout(0.9))  # a dropout module too
    model.eval()
    ids = torch.arange(12).reshape(2, 6)
    want = model(ids).logits
    with training_mode(model):
        assert model.training
        noisy = model(ids).logits
    assert not model.training and not torch.allclose(noisy, want)  # dropout bites in train mode
    disable_dropout(model)
    with training_mode(model):
        torch.testing.assert_close(model(ids).logits, want)
    assert not model.training
