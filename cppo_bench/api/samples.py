"""`cppo-bench samples`: a run's samples per problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def samples(
    run: str | Path, problem: str | None = None, *, data: str | Path | None = None, **options: Any
) -> list[dict[str, Any]]:
    """A run's samples per problem (statement, plans, programs, verdicts, first failing
    test), as `cppo-bench samples` shows them; see cppo_bench.runner.samples."""
    from cppo_bench.runner.samples import sample_rows

    return sample_rows(run, problem, data=data, loader_options=options or None)
