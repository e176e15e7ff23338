"""`cppo-bench` command line. Sub-commands live in their own modules and are imported
only when called, so `cppo-bench verify` / `report` never import torch or vllm. Commands of
other packages (the trainers' `train`) are entry points in the group `cppo_bench.commands`
(pyproject.toml): the harness finds them at call time and names none of them, so no import,
not even one spelled as a string, goes from the harness up to the trainers."""

from __future__ import annotations

import functools
import importlib
import os

import click

from cppo_bench.errors import UserError
from cppo_bench.util.termsafe import echo, quote, safe

# OpenMP threads spin-wait by default, which slows torch ~10x on a busy small CPU; must be
# set before torch is imported (commands import it lazily, after this).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# command name -> "module:attribute" of its click command
COMMANDS: dict[str, str] = {
    "augment": "cppo_bench.cli.augment:augment",
    "audit": "cppo_bench.cli.audit:audit",
    "data": "cppo_bench.cli.data:data",
    "doctor": "cppo_bench.cli.doctor:doctor",
    "decontam": "cppo_bench.cli.decontam:decontam",
    "verify": "cppo_bench.cli.verify:verify",
    "stats": "cppo_bench.cli.stats:stats",
    "run": "cppo_bench.cli.run:run",
    "runs": "cppo_bench.cli.runs:runs",
    "samples": "cppo_bench.cli.samples:samples",
    "serve": "cppo_bench.cli.serve:serve",
    "report": "cppo_bench.cli.report:report",
    "lm-eval": "cppo_bench.cli.lmeval:lm_eval",
    "model": "cppo_bench.cli.model:model",
}
# Commands of other installed code, from its entry points in this group: the trainers add
# `train` there (pyproject.toml), so the harness never names them (they import it).
PLUGIN_GROUP = "cppo_bench.commands"


@functools.cache
def plugin_commands() -> dict[str, str]:
    """Command name -> "module:attribute" of every installed plugin command (the harness's
    own names win: a plugin cannot replace `run`)."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    return {name: target for name, target in found.items() if name not in COMMANDS}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *plugin_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name) or plugin_commands().get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        # a listed command whose module or attribute is missing is a broken install, not an
        # unknown command: say so instead of "No such command"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            raise click.ClickException(
                f"command {quote(cmd_name)} is listed but its module {module_name} is missing "
                "(a broken install? reinstall cppo-bench)"
            ) from None
        command = getattr(module, attr, None)
        if not isinstance(command, click.Command):
            raise click.ClickException(
                f"command {quote(cmd_name)}: {target} is not a click command"
            )
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            # error messages quote ids, names and paths from data: one line, escaped
            from cppo_bench.cli.run_help import foreign_hint

            message = safe(exc.message)
            hint = foreign_hint(getattr(exc, "option_name", None))
            if isinstance(exc, click.NoSuchOption) and hint:  # our text: a line of its own
                message += f"\nhint: {hint}"
                exc.possibilities = None  # type: ignore[misc]  # (Final in click's types only)
            exc.message = message  # type: ignore[misc]  # (the exception click will print)
            raise
        except UserError as exc:
            # THE place a user-fixable error becomes its one line (errors.py): commands add
            # context by raising another UserError, never by catching and printing
            message = str(exc)
            setting = getattr(exc, "setting", None)
            if isinstance(setting, str):  # a config field: say the flag the user typed
                from cppo_bench.cli.options import flag_of

                flag = flag_of(ctx, setting)
                message = f"{flag}: {getattr(exc, 'why', '')}" if flag else message
            raise click.ClickException(safe(message)) from None
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):  # `| head` closed the pipe: not an error here
                raise
            # the file system refused (read-only, full, no permission) somewhere no reader
            # or writer turned it into its own line: still one line, naming the file
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(
                safe(f"{where}{exc.strerror or exc}; stopped here (what was stored is kept)")
            ) from None
        except KeyboardInterrupt:
            # the shell convention for SIGINT (128 + 2), so scripts can tell it from a failure
            echo("interrupted", err=True)
            ctx.exit(130)


@click.group(cls=LazyGroup)
@click.version_option(package_name="cppo-bench")
def main() -> None:
    """Evaluate and train code-generation models under a fixed pass@K budget."""


if __name__ == "__main__":  # pragma: no cover
    main()
