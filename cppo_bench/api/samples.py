"""`cppo-bench samples`: a run's samples per problem. `SamplesConfig` holds every setting of
the command; `samples` takes it (or the run and its settings as arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.api.config import build_config, required, setting
from cppo_bench.errors import DataError


@dataclass(frozen=True)
class SamplesConfig:
    """Every setting of `cppo-bench samples` (docs/options.md lists them)."""

    run: str = required("A run directory (see `cppo-bench runs`).")
    problem: str | None = setting(None, "Only this problem id.")
    data: str | None = setting(
        None,
        "The benchmark file the run was made from (for statements and failing tests; "
        "default: the run's own data source when it is still there).",
    )
    loader_options: dict[str, Any] = setting({}, "Loader options for data, as for `run`.")
    failed: bool = setting(False, "Only problems no attempt solved.")
    limit: int | None = setting(None, "First N problems shown.")

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit {self.limit}: give 1 or more")


def samples(
    run: str | Path | SamplesConfig,
    problem: str | None = None,
    *,
    data: str | Path | None = None,
    failed: bool = False,
    limit: int | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """A run's samples per problem (statement, plans, programs, verdicts, first failing
    test), as `cppo-bench samples` shows them; see cppo_bench.runner.samples. Give a
    SamplesConfig, or the run directory and its settings (`options`: loader options for
    `data`); `failed` keeps the problems no attempt solved, `limit` the first N."""
    from cppo_bench.runner.samples import sample_rows

    if isinstance(run, SamplesConfig):
        if problem is not None or data is not None or failed or limit is not None or options:
            raise DataError("samples: give a SamplesConfig or settings, not both")
        config = run
    else:
        config = build_config(SamplesConfig, {"run": run, "problem": problem, "data": data,
                                              "loader_options": options, "failed": failed,
                                              "limit": limit})  # fmt: skip
    rows = sample_rows(config.run, config.problem, data=config.data,
                       loader_options=dict(config.loader_options) or None)  # fmt: skip
    if config.failed:
        rows = [r for r in rows if not r["passed"]]
    return rows[: config.limit] if config.limit else rows
