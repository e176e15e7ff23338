"""`cppo-bench stats diversity`: the mean diversity of each run's K-tuples (D_surf, D_sem,
D_alg; cppo_bench.diversity), from the results a `StatsConfig` names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cppo_bench.api.config import setting, take_config
from cppo_bench.api.stats import Note, Progress, StatsConfig, results
from cppo_bench.errors import BackendError, DataError, SettingError, UserError
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    from cppo_bench.diversity.summary import RunDiversity

MEASURES = ("surf", "sem", "alg")


@dataclass(frozen=True, kw_only=True)
class DiversityConfig(StatsConfig):
    """`stats diversity`: which measures, and the encoder and judge they need."""

    measures: tuple[Literal["surf", "sem", "alg"], ...] = setting(
        ("surf", "sem"), "Any of surf, sem, alg."
    )
    encoder: str = setting("all-mpnet-base-v2", "Sentence encoder name or local folder (D_sem).")
    judge_backend: str = setting("hf", "Backend of the D_alg judge.")
    judge_model: str | None = setting(None, "Judge model (default: the backend's default).")
    batch_size: int = setting(32, "Texts per encoder or judge batch.")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """measures as "surf,sem", too."""
        out = StatsConfig.normalize(values)
        if isinstance(out.get("measures"), str):
            out["measures"] = [m.strip() for m in out["measures"].split(",") if m.strip()]
        return out

    def __post_init__(self) -> None:
        if not self.measures:
            raise SettingError("measures", f"give any of {', '.join(MEASURES)}")
        if self.batch_size < 1:
            raise SettingError("batch_size", f"must be >= 1, got {quote(self.batch_size)}")


def diversity(
    config: DiversityConfig | None = None,
    *,
    on_note: Note | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> list[RunDiversity]:
    """`cppo-bench stats diversity`: one RunDiversity per benchmark, method and seed, the
    mean D_surf / D_sem / D_alg over its tuples (plans, or programs for plan-less methods).
    The encoder loads (said to `on_note`) and the judge opens only for the measures asked
    for; `progress` is told each judge reply."""
    from cppo_bench.api.names import open_backend
    from cppo_bench.diversity.summary import summarise_diversity
    from cppo_bench.stats.read import rows_of

    c = take_config(DiversityConfig, config, settings)
    say: Callable[[str], None] = on_note or (lambda line: None)
    rows = rows_of(results(c, on_note=on_note))
    encoder = None
    if "sem" in c.measures:
        from cppo_bench.diversity.semantic import load_encoder

        say(f"loading sentence encoder {c.encoder}")
        encoder = load_encoder(c.encoder)
    judged = open_backend(c.judge_backend, c.judge_model, {}) if "alg" in c.measures else None
    with judged if judged is not None else nullcontext(None) as judge:
        try:
            return summarise_diversity(rows, set(c.measures), encoder=encoder, judge=judge,
                                       batch_size=c.batch_size, progress=progress)  # fmt: skip
        except ImportError as exc:  # the judge's backend package is not installed
            raise BackendError(f"judge backend {quote(c.judge_backend)}: {exc}") from None
        except ValueError as exc:  # runs without a tuple to measure: the user's input
            if isinstance(exc, UserError):
                raise
            raise DataError(f"diversity: {exc}") from None
