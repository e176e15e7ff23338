"""One vocabulary on the command line (issue 48 item 6): a run store is `--runs` on every
command, the old spellings still work hidden, and docs/commands.md lists every command.

The walk goes over the real command tree (`cppo-bench --help`'s list: the harness's
COMMANDS and the plugged-in ones, `train` among them; each loaded as `--help` would), so a
new command or option that names a run store differently fails here."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cppo_bench.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
STORE = re.compile(r"\brun store\b", re.IGNORECASE)


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(main)
    found: list[tuple[str, click.Command]] = []

    def walk(path: str, cmd: click.Command) -> None:
        found.append((path, cmd))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(f"{path} {name}", sub)

    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        if cmd is not None:  # an extra that is not installed (train without torch) is absent
            walk(name, cmd)
    return found


def test_every_option_that_names_a_run_store_is_spelled_runs() -> None:
    wrong = [
        f"{path}: {'/'.join(p.opts)}"
        for path, cmd in _commands()
        for p in cmd.params
        if isinstance(p, click.Option) and not p.hidden
        and bool(STORE.search(p.help or "") or p.default == "runs") != ("--runs" in p.opts)
    ]  # fmt: skip
    assert not wrong, f"a run store under another name, or --runs for something else: {wrong}"
    assert sum("--runs" in p.opts for _, c in _commands() for p in c.params) >= 5


@pytest.mark.parametrize(
    ("args", "old"),
    [(["runs"], "--out"), (["runs", "merge"], "--out")],
)
def test_old_spellings_still_name_the_store_and_clash_with_the_new(
    tmp_path: Path, args: list[str], old: str
) -> None:
    runner = CliRunner()
    new = runner.invoke(main, [*args, "--runs", str(tmp_path / "a")])
    legacy = runner.invoke(main, [*args, old, str(tmp_path / "a")])
    assert new.exit_code == legacy.exit_code == 0, (new.output, legacy.output)
    assert new.output == legacy.output and str(tmp_path / "a") in new.output
    helped = runner.invoke(main, [*args, "--help"]).output
    assert "--runs" in helped and f"{old} " not in helped  # hidden, still accepted
    for order in ([old, "x", "--runs", "y"], ["--runs", "y", old, "x"]):
        both = runner.invoke(main, [*args, *order])
        assert both.exit_code == 2 and f"give --runs or {old}, not both" in both.output


def test_a_subcommand_does_not_inherit_its_groups_old_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # click shares ctx.meta between a group and its subcommands: the alias must stay per command
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["runs", "--out", str(tmp_path / "g"), "merge"])
    assert res.exit_code == 0 and str(tmp_path / "g") not in res.output, res.output


def test_commands_md_lists_every_command() -> None:
    text = DOCS.read_text()
    listed = set(re.findall(r"^\| `cppo-bench ([a-z-]+)", text, flags=re.MULTILINE))
    every = set(main.list_commands(click.Context(main)))  # (the plugged-in `train` too)
    assert listed == every, (sorted(every - listed), sorted(listed - every))
