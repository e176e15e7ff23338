"""benchmarks/train_step.py's bare transformers loop runs where the engine's update runs: its
model and micro-batches are moved to the device (it stayed on the CPU while the engine trained
on CUDA: issue 35 item 10), in training mode as the engine's update is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests_paths import REPO

torch = pytest.importorskip("torch")


def test_bare_update_moves_its_model_and_batches_to_the_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from train_helpers import tiny_model_dir

    from trainers.core.batch import Region, Row

    sys.path.insert(0, str(REPO / "benchmarks"))
    import train_step

    moved: list[str] = []
    real_to = torch.nn.Module.to

    def spy(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if args and isinstance(args[0], (str, torch.device)):
            moved.append(str(args[0]))
        return real_to(self, *args, **kwargs)

    seen: list[tuple[str, bool]] = []
    real_forward = torch.nn.Embedding.forward

    def embed(self, ids):  # noqa: ANN001, ANN202
        seen.append((ids.device.type, self.training))
        return real_forward(self, ids)

    monkeypatch.setattr(torch.nn.Module, "to", spy)
    monkeypatch.setattr(torch.nn.Embedding, "forward", embed)
    rows = [Row.prompt_completion([1, 2, 3], [4, 5], Region.RESPONSE, 0.0) for _ in range(3)]
    seconds = train_step.bare_update(str(tiny_model_dir(tmp_path / "tiny")), rows, 2, 0, "cpu")
    assert seconds > 0
    assert "cpu" in moved  # the model is sent to the device it is asked for
    assert seen and all(s == ("cpu", True) for s in seen)  # batches there, training mode
