"""What the CLI commands share: one KEY=VALUE parser, one --bench/--data/-o option set, one
backend opener that always closes the backend; and no test hook inside `run`."""

from __future__ import annotations

import inspect

import click
import pytest
import run_scripted
from run_scripted import ScriptedBackend

from cppo_bench.api.names import open_backend
from cppo_bench.cli.data import show
from cppo_bench.cli.options import parse_kv
from cppo_bench.cli.run import run
from cppo_bench.cli.verify import verify


def test_one_kv_parser_for_every_flag():
    assert parse_kv(("n=3", "flag=true", "name=v6", "xs=[1, 2]")) == {
        "n": 3, "flag": True, "name": "v6", "xs": [1, 2]
    }  # fmt: skip
    for bad in (("novalue",), ("=3",), ("a b=1",), ("a=1", "a=2")):
        with pytest.raises(click.BadParameter):
            parse_kv(bad, "-m/--method-option")


def test_run_data_show_and_verify_share_the_benchmark_options():
    def flags(command: click.Command) -> dict[str, tuple]:
        return {p.name: tuple(p.opts) for p in command.params
                if p.name in ("bench", "data_path", "option_pairs")}  # fmt: skip

    assert flags(run) == flags(show) == flags(verify)
    assert flags(run) == {
        "bench": ("--bench",), "data_path": ("--data",), "option_pairs": ("-o", "--option", "--loader-option"),
    }  # fmt: skip


def test_the_backend_is_closed_however_the_block_ends():
    backend = ScriptedBackend()
    run_scripted.LIVE[:] = [backend]
    with pytest.raises(RuntimeError), open_backend("run_scripted:live", None, {}) as opened:
        assert opened.model_id == "scripted-model"  # built on first use
        raise RuntimeError("a run failing half-way")
    assert backend.closed


def test_run_has_no_test_hook():
    assert "ctx" not in inspect.signature(run.callback).parameters
    assert ".obj" not in inspect.getsource(run.callback)
