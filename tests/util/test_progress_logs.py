"""Progress without a terminal (nohup, Slurm logs): plain lines at a steady interval from the
one progress module, PlanSearch's stages named, training's per-step lines; trackers by name.
Driven by an injected clock: no sleeps."""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend

from cppo_bench import api
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.util.progress import Ticker, progress_bar


class FakeClock:
    def __init__(self, step: float = 0.0) -> None:
        self.now, self.step = 1000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_ticker_writes_once_per_interval_and_closes_with_a_line():
    clock, out = FakeClock(), io.StringIO()
    ticker = Ticker(lambda e: f"at {e:.0f}", stream=out, interval=30, clock=clock, heartbeat=False)
    ticker.start()
    assert out.getvalue() == ""  # shorter than an interval: nothing yet
    clock.now += 10
    assert not ticker.tick()
    clock.now += 25
    assert ticker.tick() and out.getvalue() == "at 35\n"
    clock.now += 5
    assert not ticker.tick()  # 5 s after the last line
    clock.now += 30
    ticker.stop()
    assert out.getvalue().splitlines() == ["at 35", "at 70"]


def test_quick_work_writes_nothing():
    out = io.StringIO()
    with progress_bar(
        "reading", 3, stream=out, interval=30, clock=FakeClock(), heartbeat=False
    ) as bar:
        bar(3)
    assert out.getvalue() == ""


def test_progress_bar_without_a_terminal_is_plain_lines_escaped():
    out, clock = io.StringIO(), FakeClock(step=31)
    with progress_bar("train", 4, stream=out, clock=clock, interval=30, heartbeat=False) as bar:
        bar.note("reward 0.5 \x1b[2J")
        bar(1)
        bar.log("step 1/4: loss 0.1")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("train: 1/4 (25%) elapsed 0:00:31, 31.0 s each")
    assert "reward 0.5 \\x1b[2J" in lines[0]  # outside text never reaches the terminal raw
    assert "step 1/4: loss 0.1" in lines
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()


def test_quiet_writes_nothing():
    out = io.StringIO()
    with progress_bar("x", 2, quiet=True, stream=out, clock=FakeClock(50), interval=1) as bar:
        bar(2)
        bar.log("step")
    assert out.getvalue() == ""


def test_a_plansearch_run_in_a_log_names_its_stages(tmp_path):
    from cppo_bench.cli.run_view import RichReporter

    problems = load_benchmark("demo").problems[:2]
    out = io.StringIO()

    @contextmanager
    def session(seed):
        with RichReporter("plansearch seed 0", 2, stream=out, interval=30,
                          clock=FakeClock(step=31), heartbeat=False) as rep:  # fmt: skip
            yield rep

    api.run(
        "plansearch",
        "demo",
        backend=ScriptedBackend(problems),
        k=2,
        out=tmp_path,
        limit=2,
        method_options={"n_candidates": 2},
        session=session,
    )
    text = out.getvalue()
    for stage in ("plansearch_observations", "plansearch_sketch", "plansearch_pseudocode"):
        assert f"stage {stage} x" in text, text
    assert text.splitlines()[-1].startswith("plansearch seed 0: 2/2 problems, pass@2 ")
    assert "\x1b" not in text


def test_step_line_names_what_trl_logs():
    from trainers.engine.metrics import step_line

    line = step_line(
        {"step": 3, "loss": 0.25, "reward_mean": 0.5, "kl": 0.002, "lr": 1e-6,
         "grad_norm": 1.5, "tokens_per_s": 120.0, "time_step": 2.5},
        10,
    )  # fmt: skip
    assert line == (
        "step 3/10: loss 0.2500 reward 0.500 kl 2.000e-03 lr 1.00e-06 grad_norm 1.500 "
        "tokens/s 120.0 time/step 2.50 s"
    )
    assert "loss -" in step_line({"step": 1}, 1)  # a missing metric is a dash, not a crash


def test_report_to_names_a_missing_tracker_in_one_line(monkeypatch):
    import importlib.util

    from cppo_bench.errors import DataError
    from trainers.engine.config import ConfigError, TrainConfig
    from trainers.engine.trackers import check_tracker

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "wandb" else real(n, *a)
    )
    with pytest.raises(DataError, match="report_to wandb needs the wandb package: pip install"):
        check_tracker("wandb")
    TrainConfig(report_to="wandb")  # a known tracker
    with pytest.raises(ConfigError, match="none, tensorboard, wandb"):
        TrainConfig(report_to="mlflow")


def test_wandb_without_a_key_goes_offline_under_the_run(monkeypatch, tmp_path, capsys):
    import importlib.util

    from trainers.engine.trackers import check_tracker

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "wandb" else real(n, *a)
    )
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert check_tracker("wandb", tmp_path) == {"wandb": {"dir": str(tmp_path)}}
    import os

    assert os.environ["WANDB_MODE"] == "offline"
    assert "offline" in capsys.readouterr().err


def test_the_plain_line_says_what_is_known_not_zeros():
    """Without a terminal: while the model loads the line says so (not '0/?'); during a
    batch it gives the requests in flight (not '0 gens, - tok/s'); issue 45 item 8."""
    from types import SimpleNamespace

    from cppo_bench.cli.run_view import RichReporter

    out = io.StringIO()
    rep = RichReporter("cppo seed 0", 4, stream=out, interval=30, heartbeat=False)
    loading = rep.line(12.0)
    assert "loading the data and the model" in loading and "?" not in loading
    rep.start(Path("runs/x"), 8, [])
    rep.stage_started("plan", 8)
    batch = rep.line(40.0)
    assert "0/8 problems" in batch and "stage plan x8: 8 request(s) in flight" in batch
    assert "gens" not in batch and "tok/s" not in batch
    rep.generated(3)
    rep.stage_done(SimpleNamespace(generate_s=2.0, tokens_per_s=55.5))
    later = rep.line(60.0)
    assert "5 request(s) in flight" in later and "3 gens" in later and "55.5 tok/s" in later
