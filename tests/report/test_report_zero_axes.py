"""Figures of an all-zero store start their value axis at 0 (not matplotlib's -0.04..0.04)."""

from __future__ import annotations

from report_plant import N, Plant, _write

from cppo_bench.report import build_report
from cppo_bench.report import figures as figs


def test_all_zero_pass_figures_have_a_zero_based_axis(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    for k in (4, 8):  # k=8 also gives the K-sweep curves points
        _write(runs, Plant("direct", "org/M", "apps", 0, [[False] * k] * N, k=k,
                           planner=[0] * N, solver=[1] * N))  # fmt: skip
    seen = []
    real_save = figs._save

    def spy(fig, out_dir, name):
        seen.append((name, [ax.get_ylim() for ax in fig.axes if ax.get_visible()]))
        return real_save(fig, out_dir, name)

    monkeypatch.setattr(figs, "_save", spy)
    build_report(runs, tmp_path / "out", resamples=10, formats=("md",))
    names = {name for name, _ in seen}
    assert {"main_pass4_bars", "k_sweep_curves"} <= names, names
    for name, limits in seen:
        if name in ("main_pass4_bars", "k_sweep_curves"):
            assert limits and all(lo == 0 and hi >= 0.5 for lo, hi in limits), (name, limits)
