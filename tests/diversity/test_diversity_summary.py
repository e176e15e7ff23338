"""Per-run diversity summary over run-store rows (what `stats diversity` prints)."""

from __future__ import annotations

import numpy as np
import pytest

from cppo_bench.backends.base import GenResult
from cppo_bench.diversity.summary import summarise_diversity
from cppo_bench.metrics.table import OutcomeRow


class OneHot:
    """Each distinct text gets its own axis: any two different texts are orthogonal."""

    def __init__(self) -> None:
        self.axes: dict[str, int] = {}

    def encode(self, texts, batch_size=32):
        for t in texts:
            self.axes.setdefault(t, len(self.axes))
        out = np.zeros((len(texts), 64))
        out[np.arange(len(texts)), [self.axes[t] for t in texts]] = 1
        return out


class Judge:
    name, model_id = "j", "j"

    def __init__(self):
        self.calls = []

    def generate(self, requests, progress=None):
        self.calls.append([r.tag for r in requests])
        text = lambda r: "DP" if "dp" in r.messages[-1]["content"] else "greedy"  # noqa: E731
        return [GenResult(text=text(r), num_tokens=1, finish_reason="stop") for r in requests]

    def close(self):
        pass


def row(method, seed, texts, kind="plan"):
    return OutcomeRow("demo", method, seed, f"p{len(texts)}", texts=texts, texts_kind=kind)


def test_summary_per_run():
    rows = [
        row("cppo", 0, (("use dp", "go greedy", "x y", "z w"),)),
        row("cppo", 0, (("same", "same"), ("solo",))),  # a 1-member tuple is skipped
        row("direct", 0, (("print(1)", "print(1)"),), kind="code"),
    ]
    judge = Judge()
    out = summarise_diversity(rows, {"surf", "sem", "alg"}, encoder=OneHot(), judge=judge)
    cppo, direct = out
    assert (cppo.method, cppo.tuples, cppo.kind) == ("cppo", 2, "plan")
    assert cppo.d_surf == pytest.approx((1.0 + 0.0) / 2)  # disjoint tuple, identical tuple
    assert cppo.d_sem == pytest.approx((1.0 + 0.0) / 2)
    assert cppo.d_alg == pytest.approx((2 / 4 + 1 / 2) / 2)
    assert (cppo.judged, cppo.unparseable) == (6, 0)
    assert direct.kind == "code" and direct.d_surf == pytest.approx(0.0)
    assert judge.calls == [["judge-plan"] * 6, ["judge-code"] * 2]  # one batch per kind


def test_summary_needs_its_models_and_tuples():
    rows = [row("cppo", 0, (("a", "b"),))]
    with pytest.raises(ValueError, match="encoder"):
        summarise_diversity(rows, {"sem"})
    with pytest.raises(ValueError, match="judge"):
        summarise_diversity(rows, {"alg"})
    with pytest.raises(ValueError, match="no K-tuple"):
        summarise_diversity([row("cppo", 0, (("a",),))], {"surf"})
    only = summarise_diversity(rows, {"surf"})[0]
    assert only.d_sem is None and only.d_alg is None
