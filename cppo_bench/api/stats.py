"""`cppo-bench stats passk / bootstrap / seeds / tokens`: one config per subcommand, one
function each. `StatsConfig` holds what every subcommand reads (a run store or an outcome
CSV, a benchmark, LiveCodeBench's window); `ScoredConfig` adds how pass@k is scored. The
functions read the results (`results`) and return the frames of `cppo_bench.stats` (the
statistics on a frame, public as `cb.stats`), with the lines worth saying in their ``attrs``
or told to ``on_note``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cppo_bench.api.config import required, setting, take_config
from cppo_bench.errors import DataError, SettingError
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd

Note = Callable[[str], None]
Progress = Callable[[int], None]

__all__ = [
    "BootstrapConfig",
    "PassKConfig",
    "ScoredConfig",
    "SeedsConfig",
    "StatsConfig",
    "TokensConfig",
    "bootstrap",
    "passk",
    "results",
    "seeds",
    "tokens",
]

WINDOW = ("start_date", "end_date", "platform")


def _numbers(name: str, text: Any, kind: type) -> Any:
    """A comma-separated list a user typed ("1,2,4") as a list of `kind`; anything else as it is
    (the builder checks it)."""
    if not isinstance(text, str):
        return text
    try:
        return [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        what = "integers" if kind is int else "numbers"
        raise SettingError(name, f"{quote(text)}: not a comma-separated list of {what}") from None


@dataclass(frozen=True, kw_only=True)
class StatsConfig:
    """What every `cppo-bench stats` subcommand reads: exactly one of `runs` and `csv`,
    filtered to a benchmark and a contest-date window."""

    runs: str | None = setting(None, "Run store (or one run directory).")
    csv: str | None = setting(None, "CSV of per-problem outcomes.")
    bench: str | None = setting(None, "Only this benchmark.")
    start_date: str | None = setting(
        None,
        "Only problems whose contest date is on or after this: released after a model's "
        "cutoff (LiveCodeBench's contamination window).",
    )
    end_date: str | None = setting(
        None, "Only problems whose contest date is on or before this (LiveCodeBench's flag)."
    )
    platform: str | None = setting(None, "Only problems of this platform (atcoder, leetcode...).")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """Paths as text, and the comma-separated lists a user types as lists."""
        out = dict(values)
        for key in ("runs", "csv"):
            if isinstance(out.get(key), Path):
                out[key] = str(out[key])
        return out


@dataclass(frozen=True, kw_only=True)
class ScoredConfig(StatsConfig):
    """A stats subcommand that scores pass@k: which estimator, which K of a tuple."""

    estimator: Literal["auto", "first", "unbiased"] = setting(
        "auto",
        "pass@k for k below the run's K. auto: each run's own rule (unbiased "
        "1-C(n-c,k)/C(n,k) for exchangeable samples, as lm-eval / LiveCodeBench / evalplus; "
        "first-K for ordered tuples: cppo, fixed_strategy, skills); first: the first-K rule "
        "on the rollout for every run; unbiased: the unbiased estimator for every run.",
    )
    select: Literal["first", "last", "random"] | None = setting(
        None, "Which K of a 4-tuple count (default: the run's own setting, else first)."
    )
    seed: int = setting(0, "Seed of random selection.")

    def scoring(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "select": self.select, "seed": self.seed}


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise SettingError(name, f"must be >= 1, got {quote(value)}")


@dataclass(frozen=True, kw_only=True)
class PassKConfig(ScoredConfig):
    """`stats passk`: pass@k per benchmark and method (or per group of problems)."""

    k: tuple[int, ...] | None = setting(
        None, "Comma-separated K (default: those of 1,2,4 the runs allow; the others are named)."
    )
    spread: Literal["study", "seed-std", "bootstrap-se"] = setting(
        "study",
        "The ±, named next to it. study: trained methods std over training seeds, "
        "inference-only bootstrap SE over problems (as `report`); seed-std or bootstrap-se: "
        "that one for every method.",
    )
    resamples: int = setting(1000, "Bootstrap resamples of the SE (the report's default).")
    by: Literal["difficulty", "platform", "month", "window"] | None = setting(
        None,
        "One row per group of problems: difficulty (LiveCodeBench's easy/medium/hard), "
        "platform, contest month, or LiveCodeBench release window.",
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """k as "1,2,4" or one integer, too."""
        out = StatsConfig.normalize(values)
        if isinstance(out.get("k"), int) and not isinstance(out["k"], bool):
            out["k"] = [out["k"]]
        out["k"] = _numbers("k", out.get("k"), int)
        return out

    def __post_init__(self) -> None:
        if self.k is not None and (not self.k or min(self.k) < 1):
            raise SettingError(
                "k", f"every k must be >= 1, got {quote(','.join(map(str, self.k)))}"
            )
        _positive("resamples", self.resamples)


@dataclass(frozen=True, kw_only=True)
class BootstrapConfig(ScoredConfig):
    """`stats bootstrap`: the one-sided p that each method of `a` beats the best of `b`."""

    a: tuple[str, ...] = required("Method to test (repeatable).")
    b: tuple[str, ...] = setting(
        (), "Baseline(s); the strongest is used. Default: every other method."
    )
    k: int | None = setting(
        None, "pass@K compared (default: the largest K up to 4 the runs allow, named)."
    )
    resamples: int = setting(1000, "Bootstrap resamples.")
    alpha: float = setting(0.05, "Significance level of the dagger mark.")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """One method as a name, too (``a="cppo"``)."""
        out = StatsConfig.normalize(values)
        for key in ("a", "b"):
            if isinstance(out.get(key), str):
                out[key] = [out[key]]
        return out

    def __post_init__(self) -> None:
        if not self.a:
            raise SettingError("a", "give at least one method to test")
        _positive("k", self.k)
        _positive("resamples", self.resamples)
        if not 0 <= self.alpha <= 1:
            raise SettingError("alpha", f"must be in [0, 1], got {quote(self.alpha)}")


@dataclass(frozen=True, kw_only=True)
class SeedsConfig(ScoredConfig):
    """`stats seeds`: per-seed differences A - B (or given ones) with a Student-t interval."""

    a: str | None = setting(None, "Method A (trained, several seeds).")
    b: str | None = setting(
        None, "Method B: matched seed by seed, or its single run for every seed."
    )
    deltas: tuple[float, ...] | None = setting(
        None, "Per-seed differences given directly, e.g. 0.010,0.021,0.038."
    )
    k: int | None = setting(None, "pass@K (default: the largest K up to 4 the runs allow, named).")
    confidence: float = setting(0.95, "Confidence of the t interval, in (0, 1).")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """deltas as "0.01,0.02", too."""
        out = StatsConfig.normalize(values)
        out["deltas"] = _numbers("deltas", out.get("deltas"), float)
        return out

    def __post_init__(self) -> None:
        if self.deltas is None and not (self.a and self.b):
            raise ValueError("give deltas, or a and b with runs or csv")
        if self.deltas is not None and len(self.deltas) < 2:  # a t interval needs two
            raise SettingError("deltas", f"give two differences at least, got {len(self.deltas)}")
        _positive("k", self.k)
        if not 0 < self.confidence < 1:
            raise SettingError("confidence", f"must be in (0, 1), got {quote(self.confidence)}")


@dataclass(frozen=True, kw_only=True)
class TokensConfig(ScoredConfig):
    """`stats tokens`: decoded tokens per problem and pass@k per 10k decoded tokens."""

    k: int | None = setting(None, "pass@K (default: the largest K up to 4 the runs allow, named).")

    def __post_init__(self) -> None:
        _positive("k", self.k)


def results(
    config: StatsConfig, *, on_note: Note | None = None, progress: Progress | None = None
) -> pd.DataFrame:
    """The results frame `config` names: its run store (`cb.load_runs`: what is left out is
    told to `on_note`) or its outcome CSV, filtered to its benchmark and window."""
    from cppo_bench.stats.read import load_runs
    from cppo_bench.store.frames import read_outcomes

    say = on_note or (lambda line: None)
    if (config.runs is None) == (config.csv is None):
        raise DataError("give exactly one of runs (--runs DIR) or csv (--csv FILE)")
    if config.runs is not None:
        frame = load_runs(config.runs, warn=lambda w: say(f"warning: {w}"), progress=progress)
        skipped = frame.attrs.get("skipped", {})
        if skipped.get("runs") or skipped.get("records"):
            say(f"skipped {skipped.get('runs', 0)} unreadable run(s) and "
                f"{skipped.get('records', 0)} bad record line(s), named above; the numbers "
                "below leave them out")  # fmt: skip
    else:
        frame = read_outcomes(str(config.csv))
    if config.bench is not None:
        from cppo_bench.benchmarks import BENCHMARKS

        frame = frame[frame["benchmark"] == BENCHMARKS.canonical(config.bench)]
        if frame.empty:
            raise DataError(f"no results for benchmark {quote(config.bench)}")
    window = {name: getattr(config, name) for name in WINDOW}
    if any(v is not None for v in window.values()):
        from cppo_bench.stats import window as cut

        frame = cut(frame, **window)
        left = frame.attrs["left_out"]
        said = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in window.items() if v)
        say(f"window {said}: {left['outside']} problem rows outside it, {left['undated']} "
            "without a contest date left out")  # fmt: skip
        if frame.empty:
            raise DataError(f"no results in the window ({said})")
    return frame


def passk(
    config: PassKConfig | None = None,
    *,
    on_note: Note | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """`cppo-bench stats passk`: `cb.stats.pass_at_k` (or `pass_at_k_by` with `by`) on the
    results of `config` (or its fields as keywords: ``passk(runs="runs", k=[1, 4])``).
    Without `k`: those of 1, 2, 4 the runs allow; the others, and why, are in
    ``.attrs["left_out"]`` (runs made with --k 2 give pass@1 and pass@2, never a stop).
    ``.attrs["ks"]`` holds the k scored."""
    from cppo_bench.stats import DEFAULT_KS, allowed_ks, pass_at_k, pass_at_k_by

    c = take_config(PassKConfig, config, settings)
    frame = results(c, on_note=on_note, progress=progress)
    left: list[str] = []
    if c.k is None:  # a default k the runs cannot give: named, not a stop
        ks, left = allowed_ks(frame, DEFAULT_KS, **c.scoring())
    else:
        ks = list(c.k)
    options = dict(c.scoring(), spread=c.spread, resamples=c.resamples)
    if c.by is not None:
        table = pass_at_k_by(frame, c.by, ks, **options)
    else:
        table = pass_at_k(frame, ks, **options)
    table.attrs.update(ks=ks, left_out=left)
    return table


def bootstrap(
    config: BootstrapConfig | None = None,
    *,
    on_note: Note | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """`cppo-bench stats bootstrap`: `cb.stats.bootstrap` on the results of `config`; a
    comparison of nothing (no benchmark has `a` and a baseline) is one DataError."""
    from cppo_bench.stats import bootstrap as compare

    c = take_config(BootstrapConfig, config, settings)
    frame = results(c, on_note=on_note, progress=progress)
    table = compare(frame, c.a, c.b, k=c.k, resamples=c.resamples, alpha=c.alpha,
                            **c.scoring())  # fmt: skip
    if table.empty:
        raise DataError("nothing to compare: no benchmark has both a (--a) and a baseline")
    return table


def seeds(
    config: SeedsConfig | None = None,
    *,
    on_note: Note | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """`cppo-bench stats seeds`: `cb.stats.seeds` on the results of `config`, or, with
    `deltas`, the interval of those differences (one row, benchmark "-", method "given")."""
    import pandas as pd

    from cppo_bench.metrics import seed_difference_ci
    from cppo_bench.stats import seeds as differences

    c = take_config(SeedsConfig, config, settings)
    if c.deltas is not None:
        ci = seed_difference_ci(list(c.deltas), c.confidence)
        table = pd.DataFrame([{
            "benchmark": "-", "method": "given", "estimator": "given", "deltas": list(c.deltas),
            "mean": ci.mean, "low": ci.low, "high": ci.high, "confidence": c.confidence,
            "ci": ci,
        }])  # fmt: skip
        table.attrs.update(k=c.k, left_out=[])
        return table
    assert c.a is not None and c.b is not None  # (SeedsConfig checks: deltas, or a and b)
    frame = results(c, on_note=on_note, progress=progress)
    table = differences(frame, c.a, c.b, k=c.k, confidence=c.confidence, **c.scoring())
    if table.empty:
        raise DataError(f"no benchmark has results for both {quote(c.a)} and {quote(c.b)}")
    return table


def tokens(
    config: TokensConfig | None = None,
    *,
    on_note: Note | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """`cppo-bench stats tokens`: `cb.stats.tokens` on the results of `config`."""
    from cppo_bench.stats import tokens as decoded

    c = take_config(TokensConfig, config, settings)
    frame = results(c, on_note=on_note, progress=progress)
    return decoded(frame, k=c.k, **c.scoring())
