"""The reading edge of a results frame: where what only a method knows about a stored run
is asked of it, so the run store below imports no method and the metrics read no disk.

`load_runs` is the public `cppo_bench.load_runs`: the store's reader
(cppo_bench.store.frames) given each run's pass@k rule (the one the run recorded when
made; a run made before runs recorded it gets its method's rule for its options,
cppo_bench.methods.stored). `rows_of` turns a frame (a run store's, an outcome CSV's, or one
built by hand) into the OutcomeRows the metrics take; a row without an estimator is scored
by its registered method's rule with default options.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cppo_bench.errors import DataError
from cppo_bench.store.frames import check_frame
from cppo_bench.store.outcomes import ESTIMATORS, OutcomeRow
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd


def load_runs(
    path: str | Path,
    *,
    warn: Callable[[str], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Every run under `path` (a run store, or one run directory) as one DataFrame row per
    problem record (columns in cppo_bench.store.frames). A run whose manifest fails its
    schema or whose method refuses its stored options, records that fail theirs
    (FILE:LINE), duplicate runs of one configuration and seed, and missing shards are named
    through `warn` and left out, never averaged in; the good runs are still read (a
    DataError only when no run is readable). How many were left out is in
    ``frame.attrs["skipped"]`` ({"runs": n, "records": m})."""
    from cppo_bench.methods.stored import stored_rule
    from cppo_bench.store import frames

    return frames.load_runs(path, rule_of=stored_rule, warn=warn, progress=progress)


def _cell(row: dict[str, Any], name: str, default: Any = None) -> Any:
    """A frame cell, with pandas' missing values (NaN, None, pd.NA) as `default`."""
    value = row.get(name, default)
    if value is None:
        return default
    try:
        import pandas as pd

        if not isinstance(value, tuple | list | dict) and pd.isna(value):
            return default
    except (TypeError, ValueError):
        pass
    return value


def rows_of(frame: pd.DataFrame) -> list[OutcomeRow]:
    """The frame's rows as the metrics' OutcomeRows (grouped by `method_label` where the
    frame has it, else `method`). A frame filtered or built by hand works too: only
    `method`, `problem_id` and `outcomes` or `passed` are required."""
    check_frame(frame)
    missing = {"method", "problem_id"} - set(frame.columns)
    if missing or not {"outcomes", "passed"} & set(frame.columns):
        need = sorted(missing) or ["outcomes or passed"]
        raise DataError(f"results frame: missing column(s) {', '.join(need)}")
    from cppo_bench.methods import passk_rule

    out = []
    for row in frame.to_dict("records"):
        estimator, select = _cell(row, "estimator"), _cell(row, "select")
        if estimator is None:  # a CSV or a hand-built frame: the registered method's rule
            # with its default options; exchangeable samples for any other label
            estimator, default_select = passk_rule(str(row["method"]))
            select = select or default_select
        if estimator not in ESTIMATORS:
            raise DataError(
                f"results frame: {row['method']}/{row['problem_id']}: estimator must be one "
                f"of {', '.join(ESTIMATORS)}, got {quote(estimator)}"
            )
        outcomes = _cell(row, "outcomes")
        if outcomes is not None and not isinstance(outcomes, tuple):
            outcomes = tuple(ch == "1" for ch in str(outcomes))
        passed = _cell(row, "passed")
        tokens = [_cell(row, f"{part}_tokens") for part in ("planner", "solver")]
        out.append(
            OutcomeRow(
                benchmark=str(_cell(row, "benchmark", "-")),
                method=str(_cell(row, "method_label") or row["method"]),
                seed=int(_cell(row, "seed", 0)),
                problem_id=str(row["problem_id"]),
                outcomes=outcomes,
                passed=None if passed is None else bool(passed),
                planner_tokens=None if tokens[0] is None else int(tokens[0]),
                solver_tokens=None if tokens[1] is None else int(tokens[1]),
                estimator=str(estimator),
                select=str(select or "first"),
                answers=tuple(_cell(row, "answers", ())),
                label=_cell(row, "answer_label"),
                texts=tuple(_cell(row, "texts", ())),
                texts_kind=str(_cell(row, "texts_kind", "plan")),
                trained=_cell(row, "trained"),
                dataset_size=int(_cell(row, "dataset_size", 0)),
                validity=_cell(row, "validity"),
            )
        )
    return out
