"""`cppo-bench run --like RUN_DIR`: the options of a stored run, read from its manifest, for
every option the command line does not give, so the run is made again (the same identity:
the same run directory name) from any folder.

What a manifest holds is enough: method, benchmark, model, backend, K, seed, sampling, every
method option, the data's resolved path and every loader option (cppo_bench.runner.rundata),
the problems asked for (``selected``) and a trained checkpoint's tags. Without ``--runs`` the
run is made in the store RUN_DIR lies in, so a stored run resumes or extends itself.
"""

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
    """Fill ``opts`` from the manifest of ``opts["like"]`` where the command line is silent.
    A run that cannot be read, or whose data file is gone or changed, is one line."""
    from cppo_bench.backends.opening import backend_factory, default_model_label
    from cppo_bench.errors import DataError
    from cppo_bench.runner.rejudge import store_root
    from cppo_bench.runner.rundata import source_of
    from cppo_bench.store.runs import read_manifest
    from cppo_bench.util.registry import UnknownNameError

    run_dir = Path(opts["like"])
    try:
        m = read_manifest(run_dir)
        src = source_of(m)
    except DataError as exc:
        raise DataError(f"--like {run_dir}: {exc}") from None
    if src.note and not _given(ctx, "data_path"):
        raise click.ClickException(f"--like {run_dir}: {src.note}; give it with --data")
    if m.extra.get("test_set") and not _given(ctx, "tests_dir"):
        raise click.ClickException(
            f"--like {run_dir}: judged with an augmented test set; give it with --tests"
        )
    recorded = m.extra.get("data")
    # a data file given to the run is given again; the loader's own source stays its own
    data = src.data if not isinstance(recorded, dict) or recorded.get("path") else None
    try:
        default = default_model_label(m.backend, backend_factory(m.backend))
    except UnknownNameError as exc:
        raise DataError(f"--like {run_dir}: {exc}") from None
    fill: dict[str, Any] = {
        "method": m.method,
        "bench": m.bench,
        "backend": m.backend,
        "model": None if m.model == default else m.model,
        "k": m.k,
        "seeds": str(m.seed),
        "limit": m.selected or len(m.problem_ids),
        "data_path": data,
        "runs": store_root(run_dir, m),
        "option_pairs": tuple(_pair(k, v) for k, v in sorted(src.options.items())),
        **{key: m.sampling[key] for key in ("temperature", "top_p", "max_tokens") if key in m.sampling},
        **{tag: m.extra.get(tag) for tag in ("trained", "base_model", "train_seed")},
    }  # fmt: skip
    if m.shard is not None:
        fill["shard"] = f"{m.shard['index']}/{m.shard['count']}"
    for key, value in fill.items():
        if not _given(ctx, key):
            opts[key] = value
    if not any(_given(ctx, f) for f in (*METHOD_FLAGS, "method_option", "strict_plans")):
        opts["method_option"] = tuple(_pair(k, v) for k, v in sorted(m.method_options.items()))
