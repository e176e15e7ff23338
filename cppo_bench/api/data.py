"""`cppo-bench data`: a benchmark's problems, as the loaders read them. `DataConfig` holds
every setting of `data show`; `show` takes it (or its fields as keywords) and `benchmarks`
lists what `data list` prints."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.api.config import build_config, required, setting
from cppo_bench.benchmarks.load import load_result
from cppo_bench.benchmarks.loadreport import load_line
from cppo_bench.errors import DataError
from cppo_bench.problem import LoadResult, Problem

__all__ = ["DataConfig", "benchmarks", "load_benchmark", "load_line", "load_result", "show",
           "summary_rows"]  # fmt: skip


def load_benchmark(
    name: str,
    data: str | Path | None = None,
    *,
    limit: int | None = None,
    strict: bool = False,
    **options: Any,
) -> list[Problem]:
    """The problems of benchmark `name` (see `cppo-bench data list`), from `data` (a local
    file or folder) or, without it, the benchmark's hub dataset (`demo` ships with the
    package). `options` are the loader options `-o KEY=VALUE` sets on the command line, e.g.
    ``difficulty="easy"``. Malformed records are skipped (``strict=True``: stop at the first);
    `load_result` also returns them."""
    return load_result(name, data, limit=limit, strict=strict, **options).problems


@dataclass(frozen=True)
class Benchmark:
    """A registered benchmark, as `data list` shows it."""

    name: str
    hub: str | None  # its Hugging Face dataset "id [split]"; None: shipped with the package
    description: str


def benchmarks() -> list[Benchmark]:
    """Every registered benchmark, in the registry's order."""
    from cppo_bench.benchmarks import BENCHMARKS

    out = []
    for name in BENCHMARKS.names():
        spec = BENCHMARKS.get(name)
        hub = f"{spec.hub_id} [{spec.default_split}]" if spec.hub_id else None
        out.append(Benchmark(name, hub, spec.description))
    return out


@dataclass(frozen=True)
class DataConfig:
    """Every setting of `cppo-bench data show` (docs/options.md lists them)."""

    bench: str = required("Benchmark (see `cppo-bench data list`).")
    data: str | None = setting(None, "Local copy of the benchmark's data (default: its dataset).")
    loader_options: dict[str, Any] = setting({}, "Options of the benchmark's loader (KEY=VALUE).")
    limit: int | None = setting(None, "Show only the first N problems.")
    strict: bool = setting(False, "Stop at the first malformed record.")

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit {self.limit}: give 1 or more")


def show(config: DataConfig | str | None = None, **settings: Any) -> LoadResult:
    """What `cppo-bench data show` prints: the problems as the loaders normalise them, with
    the records skipped and the loader's notes (every problem, duplicates included). Give a
    DataConfig, or the benchmark's name and the settings as keywords."""
    if isinstance(config, DataConfig):
        if settings:
            raise DataError("show: give a DataConfig or settings, not both")
        c = config
    else:
        c = build_config(DataConfig, {"bench": config, **settings})
    return load_result(c.bench, c.data, limit=c.limit, strict=c.strict, unique=False,
                       **c.loader_options)  # fmt: skip


def _spread(values: list[int]) -> str:
    if not values:
        return "-"
    return f"{min(values)} / {statistics.median(values):g} / {max(values)}"


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: -kv[1])) or "-"


def summary_rows(problems: list[Problem]) -> list[tuple[str, str]]:
    """(label, value) rows describing a list of problems (what `data show` tabulates)."""
    n_tests = [len(p.tests) for p in problems]
    modes = Counter("+".join(sorted(p.modes)) or "none" for p in problems)
    kinds = Counter(t.kind for p in problems for t in p.tests)
    limits = [p.time_limit_s for p in problems if p.time_limit_s]
    fn_names = {p.fn_name for p in problems if p.fn_name}
    rows = [
        ("problems", str(len(problems))),
        ("tests per problem (min / median / max)", _spread(n_tests)),
        ("tests", f"{sum(n_tests)} ({_counts(kinds)})"),
        ("problems by test mode", _counts(modes)),
        # fewer than the call problems when several problems share a function name
        ("distinct function names (call mode)", str(len(fn_names))),
        ("checkers", _counts(Counter(p.checker for p in problems))),
        ("tasks", _counts(Counter(p.task for p in problems))),
        ("difficulty", _counts(Counter(p.difficulty or "-" for p in problems))),
        ("with reference solutions", str(sum(bool(p.reference_solutions) for p in problems))),
        ("time limit s (min / max)", f"{min(limits):g} / {max(limits):g}" if limits else "-"),
    ]
    selections = {json.dumps(p.metadata.get("selection"), sort_keys=True) for p in problems}
    if selections - {"null"}:
        rows.append(("selection", "; ".join(sorted(selections - {"null"}))))
    return rows
