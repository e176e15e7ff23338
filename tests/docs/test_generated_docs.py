"""The generated docs (issue 48 item 5) are what the code says today: docs/options.md (every
command, option, setting, default and help, from the click tree and the config objects) and
the layer table of docs/concepts.md (cppo_bench/util/layers.py). Run as a developer runs it,
from the repository root with no PYTHONPATH."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cppo_bench.cli import reference

REPO = Path(__file__).resolve().parents[2]


def test_generated_docs_are_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cppo_bench.cli.reference", "--check"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_changed_default_makes_the_options_page_stale(monkeypatch) -> None:
    # the check sees what it claims to: the page follows a config's default
    from cppo_bench.api.run import RunConfig
    from cppo_bench.cli.run import run

    before = reference.options_md()
    (k,) = [p for p in run.params if p.name == "k"]
    monkeypatch.setattr(k, "default", 8)
    after = reference.options_md()
    assert before != after and "[default: 8; x>=1]" in after
    assert RunConfig.__dataclass_fields__["k"].default == 4


def test_every_command_has_a_section() -> None:
    import click

    from cppo_bench.cli import main

    text = reference.options_md()
    with click.Context(main) as ctx:
        for name in main.list_commands(ctx):
            assert f"## `cppo-bench {name}`" in text, name


def test_the_layer_table_is_drawn_from_the_house_plan() -> None:
    from cppo_bench.util.layers import LAYERS

    text = reference.concepts_md((REPO / "docs" / "concepts.md").read_text(encoding="utf-8"))
    for i, units in enumerate(LAYERS):
        assert f"{i:2d} | {', '.join(units)}\n" in text
