"""ParamSnapshot.step_norm widens to fp64 only on the host and a chunk at a time: the old code
took ``.double()`` of each whole parameter where it lived (a 5.1 GB fp64 copy of Qwen3.5-4B's
tied embedding on the GPU right after the optimizer step: issue 35 item 8). Every op's output
is watched (a TorchDispatchMode), and the norm is checked against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_step_norm_never_holds_a_whole_parameter_in_fp64(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    from trainers.engine import metrics

    monkeypatch.setattr(metrics, "STEP_NORM_CHUNK", 1000, raising=False)
    gen = torch.Generator().manual_seed(0)
    params = [torch.randn(100, 100, generator=gen), torch.randn(7, generator=gen)]
    snap = metrics.ParamSnapshot(params)
    before = [p.clone().numpy().astype(np.float64) for p in params]
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn(p.shape, generator=gen) * 1e-3)

    widest: list[int] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.dtype == torch.float64:
                    widest.append(t.numel())
            return out

    with Watch():
        got = snap.step_norm()
    pairs = zip(params, before, strict=True)
    want = np.sqrt(sum(((p.numpy().astype(np.float64) - b) ** 2).sum() for p, b in pairs))
    assert got == pytest.approx(float(want), rel=1e-12)
    assert widest and max(widest) <= 1000  # one chunk, never the 10,000-element parameter
