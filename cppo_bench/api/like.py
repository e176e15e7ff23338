"""`run --like RUN_DIR`: the settings of a stored run, read from its manifest, so the run is
made again (the same identity: the same run directory name) from any folder.

What a manifest holds is enough: method, benchmark, model, backend, K, seed, sampling, every
method option, the data's resolved path and every loader option (cppo_bench.runner.rundata),
the problems asked for (``selected``) and a trained checkpoint's tags. The store is the one
RUN_DIR lies in, so a stored run resumes or extends itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.util.registry import UnknownNameError


@dataclass(frozen=True)
class Like:
    """RunConfig fields of a stored run (``settings``; ``tags`` apart, as the CLI sets them by
    flags), and what the caller must give again: the data (``data_note`` says why) or the
    augmented test set it was judged with (``needs_tests``)."""

    settings: dict[str, Any]
    tags: dict[str, Any]
    data_note: str | None
    needs_tests: bool


def like(run_dir: str | Path) -> Like:
    """The settings that make the run in `run_dir` again; an unreadable run is one line."""
    from cppo_bench.backends.opening import backend_factory, default_model_label
    from cppo_bench.runner.rejudge import store_root
    from cppo_bench.runner.rundata import source_of
    from cppo_bench.store.runs import read_manifest

    run_dir = Path(run_dir)
    try:
        m = read_manifest(run_dir)
        src = source_of(m)
        default = default_model_label(m.backend, backend_factory(m.backend))
    except (DataError, UnknownNameError) as exc:
        raise DataError(f"--like {run_dir}: {exc}") from None
    recorded = m.extra.get("data")
    # a data file given to the run is given again; the loader's own source stays its own
    data = src.data if not isinstance(recorded, dict) or recorded.get("path") else None
    settings: dict[str, Any] = {
        "method": m.method,
        "bench": m.bench,
        "backend": m.backend,
        "model": None if m.model == default else m.model,
        "k": m.k,
        "seeds": str(m.seed),
        "limit": m.selected or len(m.problem_ids),
        "data": None if data is None else str(data),
        "runs": str(store_root(run_dir, m)),
        "loader_options": dict(src.options),
        "method_options": dict(m.method_options),
        **{key: m.sampling[key] for key in ("temperature", "top_p", "max_tokens") if key in m.sampling},
    }  # fmt: skip
    if m.shard is not None:
        settings["shard"] = f"{m.shard['index']}/{m.shard['count']}"
    tags: dict[str, Any] = {
        tag: m.extra[tag] for tag in ("trained", "base_model", "train_seed") if tag in m.extra
    }
    return Like(settings, tags, src.note or None, bool(m.extra.get("test_set")))
