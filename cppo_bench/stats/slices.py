"""LiveCodeBench's own analysis on a results frame: pass@K by difficulty (or platform, or
release window) and over a contest-date window, LiveCodeBench's answer to contamination
(score only problems released after a model's training cutoff).

Names follow LiveCodeBench's released scorer (lcb_runner/evaluation/compute_scores.py):
``start_date`` / ``end_date`` are inclusive YYYY-MM-DD bounds on ``contest_date``,
``platform`` keeps one platform, and difficulty is the dataset's easy / medium / hard.
A record keeps its problem's difficulty, platform and contest date (cppo_bench.runner.scoring);
rows without the field a window needs are left out and counted, never guessed.

    frame = cb.load_runs("runs/")
    recent = cb.stats.window(frame, start_date="2024-08-01")
    cb.stats.pass_at_k_by(recent, "difficulty", k=[1, 4])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cppo_bench.errors import DataError
from cppo_bench.util.registry import Registry
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd

UNKNOWN = "(unknown)"
GROUPERS: Registry[Callable[[Any], str]] = Registry("grouping")


def _text(value: Any) -> str | None:
    """A frame cell as text, None when it holds none: pandas fills a missing cell with NaN,
    which is truthy and prints as 'nan' (a CodeContests record without a difficulty)."""
    return value if isinstance(value, str) and value.strip() else None


@GROUPERS.register("difficulty")
def _difficulty(row: Any) -> str:
    text = _text(row["difficulty"])
    return text.lower() if text else UNKNOWN


@GROUPERS.register("platform")
def _platform(row: Any) -> str:
    return _text(row["platform"]) or UNKNOWN


@GROUPERS.register("month")
def _month(row: Any) -> str:
    date = _date(row["contest_date"])
    return date[:7] if date else UNKNOWN


@GROUPERS.register("window")
def _window(row: Any) -> str:
    """The LiveCodeBench release increment whose publication window holds the date."""
    from cppo_bench.benchmarks.livecodebench import WINDOWS

    date = _date(row["contest_date"])
    for n, (lo, hi) in sorted(WINDOWS.items()):
        if date and lo <= date <= hi:
            return f"v{n} ({lo}..{hi})"
    if not date:
        return UNKNOWN
    return f"after v{max(WINDOWS)}" if date > WINDOWS[max(WINDOWS)][1] else "before v1"


def _date(value: Any) -> str | None:
    from cppo_bench.benchmarks._fields import iso_date

    if not isinstance(value, str) or not value:
        return None
    try:
        return iso_date(value)
    except ValueError:
        return None


def window(
    frame: pd.DataFrame,
    *,
    start_date: str | None = None,
    end_date: str | None = None,
    platform: str | None = None,
) -> pd.DataFrame:
    """The rows whose problem's contest date lies in [start_date, end_date] (inclusive,
    YYYY-MM-DD) and, with `platform`, on that platform. Rows without a contest date are left
    out when a date bound is given; how many is in ``.attrs["left_out"]``."""
    from cppo_bench.benchmarks._fields import parse_date_option

    start = parse_date_option("start_date", start_date)
    end = parse_date_option("end_date", end_date)
    if start and end and start > end:
        raise DataError(f"start_date {start} is after end_date {end}")
    out, undated = frame, 0
    if start or end:
        if "contest_date" not in frame.columns:
            raise DataError("these results have no contest dates (a CSV without contest_date?)")
        dates = frame["contest_date"].map(_date)
        undated = int(dates.isna().sum())
        keep = dates.notna()
        if start:
            keep &= dates.fillna("") >= start
        if end:
            keep &= dates.fillna("") <= end
        out = frame[keep]
    if platform is not None:
        out = out[out["platform"].fillna("").str.lower() == platform.lower()]
    out = out.copy()
    out.attrs["left_out"] = {"undated": undated, "outside": len(frame) - len(out) - undated}
    return out


def pass_at_k_by(
    frame: pd.DataFrame,
    by: str,
    k: int | Sequence[int] = (1, 2, 4),
    *,
    measure: Callable[..., pd.DataFrame],
    **options: Any,
) -> pd.DataFrame:
    """`measure` (`cppo_bench.stats.pass_at_k`, handed down by the API front, which this
    module never imports: no loop) per group of problems (`by`: difficulty, platform,
    month, window): the same columns plus `by`'s. A group's n is its own problems (a group
    is never measured against the whole benchmark's size), and `run_partial` says when the
    runs cover only part of the benchmark ("partial: n=12/300 of the benchmark")."""
    import pandas as pd

    from cppo_bench.metrics.uncertainty import is_partial

    group = GROUPERS.get(by)
    need = "contest_date" if by in ("month", "window") else by
    if need not in frame.columns:  # a CSV without the column: say which file and what it has
        source = frame.attrs.get("source", "results frame")
        have = ", ".join(str(c)[:60] for c in frame.attrs.get("columns", frame.columns))[:400]
        raise DataError(f"{source}: no {quote(need)} column to group by {by} (its columns: {have})")
    if frame.empty:
        return pd.DataFrame()
    labels = frame.apply(group, axis=1)
    # a group's n is its own, but a run over part of the benchmark stays marked partial:
    # "partial: n=4/32 of the benchmark" (the one rule `stats` and `report` use)
    keys = ["benchmark", "method"]
    covered = frame.groupby(keys)["problem_id"].nunique()
    sizes = (
        frame.groupby(keys)["dataset_size"].max()
        if "dataset_size" in frame.columns
        else covered * 0
    )
    partial = {
        key: f"partial: n={int(n)}/{int(sizes[key])} of the benchmark"
        for key, n in covered.items()
        if is_partial(int(n), int(sizes[key] or 0))
    }
    parts, warnings = [], []
    for value in sorted(set(labels), key=lambda v: (v == UNKNOWN, _order(by, v))):
        sub = frame[labels == value].copy()
        sub["dataset_size"] = 0  # coverage is the group's own
        table = measure(sub, k, **options)
        table.insert(1, by, value)
        table["run_partial"] = [
            partial.get((b, m), "") for b, m in zip(table["benchmark"], table["method"], strict=True)
        ] if len(table) else []  # fmt: skip
        parts.append(table)
        warnings += [w for w in table.attrs.get("warnings", []) if w not in warnings]
    out = pd.concat(parts, ignore_index=True)
    out.attrs["warnings"] = warnings
    return out


def _order(by: str, value: str) -> Any:
    if by == "difficulty":  # easiest first (LiveCodeBench's, then APPS's levels)
        levels = ["easy", "medium", "hard", "introductory", "interview", "competition"]
        return (levels.index(value) if value in levels else len(levels), value)
    return (0, value)
