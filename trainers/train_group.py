"""`cppo-bench train ALGO`: ``cppo`` runs the five-stage pipeline (its own options), every other
algorithm is the engine's single-run command (trainers/cli.py) with ALGO fixed."""

from __future__ import annotations

import functools

import click

from trainers.cli import ALGOS
from trainers.cli import train as engine_train


def _engine_command(algo: str) -> click.Command:
    params = [p for p in engine_train.params if p.name != "algo"]
    return click.Command(
        algo,
        params=params,
        help=engine_train.help,
        callback=functools.partial(engine_train.callback, algo),
    )


class TrainGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*ALGOS, "cppo"])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "cppo":
            from trainers.cppo_cli import cppo

            return cppo
        return _engine_command(cmd_name) if cmd_name in ALGOS else None


@click.group("train", cls=TrainGroup)
def train() -> None:
    """Train a policy: cppo (the five-stage pipeline) or pkpo, passk_rl, upskill."""
