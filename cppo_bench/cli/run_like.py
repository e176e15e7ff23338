"""`cppo-bench run --like RUN_DIR`: the settings of a stored run (cppo_bench.api.like) for
every option the command line does not give. Without ``--runs`` the run is made in the store
RUN_DIR lies in, so a stored run resumes or extends itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

# the method options `run` takes as flags of their own (given, they replace the recorded ones)
METHOD_FLAGS = ("inference", "select", "strategies", "fill")


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)


def _pair(key: str, value: Any) -> str:
    return f"{key}={json.dumps(value)}"  # parse_kv reads VAL as JSON: the value comes back


def apply_like(opts: dict[str, Any], ctx: click.Context) -> None:
    """Fill ``opts`` from the manifest of ``opts["like"]`` (cppo_bench.api.like) where the
    command line is silent. A run that cannot be read, or whose data file is gone or changed,
    is one line."""
    from cppo_bench.api.like import like
    from cppo_bench.errors import DataError

    run_dir = Path(opts["like"])
    found = like(run_dir)
    if found.data_note and not _given(ctx, "data_path"):
        raise DataError(f"--like {run_dir}: {found.data_note}; give it with --data")
    if found.needs_tests and not _given(ctx, "tests_dir"):
        raise DataError(
            f"--like {run_dir}: judged with an augmented test set; give it with --tests"
        )
    s = dict(found.settings)
    fill: dict[str, Any] = {
        **{key: s[key] for key in s if key not in ("data", "loader_options", "method_options")},
        "data_path": s["data"],
        "option_pairs": tuple(_pair(k, v) for k, v in sorted(s["loader_options"].items())),
        **{tag: found.tags.get(tag) for tag in ("trained", "base_model", "train_seed")},
    }
    for key, value in fill.items():
        if not _given(ctx, key):
            opts[key] = value
    if not any(_given(ctx, f) for f in (*METHOD_FLAGS, "method_option", "strict_plans")):
        opts["method_option"] = tuple(_pair(k, v) for k, v in sorted(s["method_options"].items()))
