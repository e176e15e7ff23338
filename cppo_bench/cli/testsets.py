"""`--tests DIR`: judge with an augmented test set (cppo-bench augment) as well as the
problems' own tests. Shared by the commands that judge programs; the set is read and applied
by the API (cppo_bench.api.testsets), so Python callers get the same checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def tests_option(func: F) -> F:
    return click.option(
        "--tests",
        "tests_dir",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="Augmented test set (made by `cppo-bench augment`): its tests are added to each "
        "problem's own. A run judged with it is a different run.",
    )(func)
