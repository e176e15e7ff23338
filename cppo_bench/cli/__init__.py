"""`cppo-bench` command line. Sub-commands live in their own modules and are imported
only when called, so `cppo-bench verify` / `report` never import torch or vllm."""

from __future__ import annotations

import importlib
import os

import click

# OpenMP threads spin-wait by default, which slows torch ~10x on a busy small CPU; must be
# set before torch is imported (commands import it lazily, after this).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# command name -> "module:attribute" of its click command
COMMANDS: dict[str, str] = {
    "data": "cppo_bench.cli.data:data",
    "decontam": "cppo_bench.cli.decontam:decontam",
    "verify": "cppo_bench.cli.verify:verify",
    "stats": "cppo_bench.cli.stats:stats",
    "run": "cppo_bench.cli.run:run",
    "runs": "cppo_bench.cli.run:runs",
    "report": "cppo_bench.cli.report:report",
    "lm-eval": "cppo_bench.cli.lmeval:lm_eval",
    "train": "trainers.train_group:train",  # trainers import the harness, never the reverse
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # the command is not built yet
                return None
            raise
        return getattr(module, attr)


@click.group(cls=LazyGroup)
@click.version_option(package_name="cppo-bench")
def main() -> None:
    """Evaluate and train code-generation models under a fixed pass@K budget."""


if __name__ == "__main__":  # pragma: no cover
    main()
