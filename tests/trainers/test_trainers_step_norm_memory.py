"""ParamSnapshot.step_norm widens to fp64 a chunk at a time: the old code took ``.double()`` of
each whole parameter where it lived (a 5.1 GB fp64 copy of Qwen3.5-4B's tied embedding on the
GPU right after the optimizer step: issue 35 item 8). Every op's output is watched (a
TorchDispatchMode), and the norm is checked against numpy's. A step copies each parameter to
the host once, for the snapshot: the norm used to move it there a second time (issue 43 item
6); every move of a parameter's storage to the host is watched (a TorchFunctionMode)."""

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


def test_a_step_copies_each_parameter_to_the_host_once() -> None:
    """The snapshot is the one move of a parameter to the host; the norm brings the snapshot
    to the parameter instead. On a GPU the old norm was a second device-to-host copy of the
    whole fp32 policy each step; on the CPU the same calls show it (``.to("cpu")`` of a
    parameter's own storage)."""
    from torch.overrides import TorchFunctionMode

    from trainers.engine import metrics

    gen = torch.Generator().manual_seed(1)
    params = [torch.randn(300, 50, generator=gen), torch.randn(11, generator=gen)]
    storages = {p.untyped_storage().data_ptr(): i for i, p in enumerate(params)}
    moved = [0] * len(params)

    def to_host(func, args, kwargs) -> bool:  # noqa: ANN001
        name = getattr(func, "__name__", "")
        if name == "cpu":
            return True
        if name != "to":
            return False
        target = [a for a in args[1:] if isinstance(a, (str, torch.device))]
        target += [kwargs[k] for k in ("device",) if k in kwargs]
        return any(torch.device(t).type == "cpu" for t in target)

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            kwargs = kwargs or {}
            src = args[0] if args else None
            if isinstance(src, torch.Tensor) and to_host(func, args, kwargs):
                i = storages.get(src.untyped_storage().data_ptr())
                if i is not None:
                    moved[i] += 1
            return func(*args, **kwargs)

    before = [p.numpy().astype(np.float64) for p in params]
    with Watch():
        snap = metrics.ParamSnapshot(params)
        with torch.no_grad():
            for p in params:
                p.add_(1e-3)
        got = snap.step_norm()
    pairs = zip(params, before, strict=True)
    want = np.sqrt(sum(((p.numpy().astype(np.float64) - b) ** 2).sum() for p, b in pairs))
    assert got == pytest.approx(float(want), rel=1e-12)
    assert moved == [1, 1], moved  # the snapshot's copy only
