"""A thin CLI over one API (issue 48 item 2): each command parses, builds ONE config object
(cppo_bench.api) with the one builder, calls the API, prints.

Held here: a CLI module imports nothing of the harness but the API (and the error classes,
the terminal printer, the progress display, the KEY=VALUE parser); every command that takes
settings is linked to its config (`cli.options.configured`), each of its parameters is a field
of that config or declared as parsed into one or as shaping what is printed, and its callback
builds the config with `build_config`; a config's wrong setting names the flag on the CLI."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.cli.options import config_of, configured
from tests.helpers.import_graph import imports, module_name

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "cppo_bench" / "cli"
# what a CLI module may import from the harness (prefixes); anything else is done by the API
ALLOWED = (
    "cppo_bench.api",
    "cppo_bench.cli",
    "cppo_bench.errors",
    "cppo_bench.stats",  # the statistics API (`cb.stats`)
    "cppo_bench.util.termsafe",  # the one printer
    "cppo_bench.util.progress",  # the one progress display
    "cppo_bench.util.keyvals",  # the one KEY=VALUE parser
    "cppo_bench.util.layers",  # the house plan, which cli/reference.py draws in the docs
)


KNOWN = {module_name(p, REPO) for p in (REPO / "cppo_bench").rglob("*.py")}


# parameters that are no setting: a command with only these has nothing to configure
NO_SETTINGS = {"help", "as_json"}


def _harness_imports(path: Path) -> set[str]:
    """The package modules a CLI module imports (a string that names none is no import:
    an entry-point group, a context key)."""
    return imports(path, module_name(path, REPO), KNOWN) & KNOWN


def test_cli_modules_import_only_the_api() -> None:
    wrong = []
    for path in sorted(CLI.glob("*.py")):
        bad = sorted(m for m in _harness_imports(path) if not m.startswith(ALLOWED))
        if bad:
            wrong.append(f"{path.name}: {', '.join(bad)}")
    assert not wrong, "a CLI module asks the harness directly (give the API a function):\n" + (
        "\n".join(wrong)
    )


def _commands(group: click.Group, ctx: click.Context, prefix: str = "") -> list:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        path = f"{prefix}{name}"
        takes = [p for p in cmd.params if p.name != "help"]
        if takes or not isinstance(cmd, click.Group):
            out.append((path, cmd))
        if isinstance(cmd, click.Group):
            out += _commands(cmd, ctx, path + " ")
    return out


def _all_commands() -> list:
    with click.Context(main) as ctx:
        return _commands(main, ctx)


def test_every_command_builds_one_config() -> None:
    missing, extra = [], []
    for path, cmd in _all_commands():
        link = config_of(cmd)
        if link is None:
            if {p.name for p in cmd.params} - NO_SETTINGS:
                missing.append(path)
            continue
        fields = {f.name for f in dataclasses.fields(link.cls)}
        reached = {link.field(p.name or "") for p in cmd.params} | set(link.parsed.values())
        unset = sorted(fields - reached - set(getattr(link.cls, "NOT_ON_THE_CLI", ())))
        if unset:
            extra.append(f"{path}: no flag sets {link.cls.__name__}.{', '.join(unset)}")
        for param in cmd.params:
            name = param.name or ""
            if name in link.parsed or name in link.view or name == "help":
                continue
            if not param.expose_value:  # a hidden old spelling handing its value on
                continue
            if link.field(name) not in fields:
                extra.append(f"{path} {param.opts[0]}: no field of {link.cls.__name__}")
        source = inspect.getsource(inspect.unwrap(cmd.callback))
        if "build_config(" not in source:
            extra.append(f"{path}: its callback does not build its config (build_config)")
    assert not missing, f"commands with no config (cli.options.configured): {missing}"
    assert not extra, "\n".join(extra)


def test_configured_takes_help_and_default_from_the_config() -> None:
    from cppo_bench.api.config import setting

    @dataclasses.dataclass(frozen=True)
    class Config:
        size: int = setting(3, "How many.")

    @configured(Config)
    @click.command()
    @click.option("--size", type=int)
    def cmd(size: int) -> None:
        pass

    (opt,) = [p for p in cmd.params if p.name == "size"]
    assert (opt.default, opt.help) == (3, "How many.")
    with pytest.raises(TypeError, match="give it in the config only"):
        configured(Config)(click.command()(click.option("--size", default=4)(lambda size: None)))


@pytest.mark.parametrize("args, line", [
    (["--seeds", "1,1"], "Error: --seeds: "),
    (["--shard", "3/3"], "Error: --shard: "),
    (["--temperature", "nan"], "Error: --temperature: must be a finite number"),
])  # fmt: skip
def test_a_wrong_setting_names_the_flag_typed(tmp_path: Path, args: list[str], line: str) -> None:
    base = ["run", "--method", "direct", "--bench", "demo", "--runs", str(tmp_path / "r")]
    result = CliRunner().invoke(main, [*base, *args])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[-1].startswith(line), result.output
    assert not (tmp_path / "r").exists()  # refused before anything was written
