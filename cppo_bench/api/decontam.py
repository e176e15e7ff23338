"""`cppo-bench decontam`: the overlap of training and evaluation sources, and the training set
with every evaluation problem removed. `DecontamConfig` holds every setting of the command;
`decontam` takes it (or its fields as keywords). The matching itself is cppo_bench.decontam
(its own `DecontamConfig` holds the four matching settings only)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cppo_bench.api.config import required, setting, take_config
from cppo_bench.errors import DataError, SettingError
from cppo_bench.util.termsafe import quote

SPEC = "BENCH, BENCH=PATH, or a JSONL file of Problem dicts."
Progress = Callable[[int], AbstractContextManager[Callable[[int], None]]]


@dataclass(frozen=True, kw_only=True)
class DecontamConfig:
    """Every setting of `cppo-bench decontam` (docs/decontam.md)."""

    train: tuple[str, ...] = required(f"Training source: {SPEC}")
    eval: tuple[str, ...] = required(f"Evaluation source: {SPEC}")
    out: str = required("Directory for filtered_train.jsonl and overlap.json.")
    ngram: int = setting(13, "Word n-gram length for fuzzy matching.")
    threshold: float = setting(0.5, "Fuzzy match when the n-gram similarity reaches this.")
    metric: Literal["containment", "jaccard"] = setting(
        "containment", "containment: shared / smaller set; jaccard: shared / union."
    )
    max_df: int = setting(
        100, "Ignore n-grams found in more than this many problems (boilerplate); 0: none."
    )
    strict: bool = setting(False, "Stop at the first malformed record.")
    loader_options: dict[str, Any] = setting(
        {},
        "Loader options by scope: {'': {...}} for every benchmark source, {'apps': {...}} for "
        "that benchmark's (-o [BENCH:]KEY=VALUE).",
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """A path as text; one source as a name, too."""
        out = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
        for key in ("train", "eval"):
            if isinstance(out.get(key), str):
                out[key] = [out[key]]
        return out

    def __post_init__(self) -> None:
        for role in ("train", "eval"):
            if not getattr(self, role):
                raise SettingError(role, f"give at least one source ({SPEC})")
        if self.ngram < 1:
            raise SettingError("ngram", f"must be >= 1, got {quote(self.ngram)}")
        if not 0.0 < self.threshold <= 1.0:
            raise SettingError("threshold", f"must be in (0, 1], got {quote(self.threshold)}")
        if self.max_df < 0 or self.max_df == 1:  # 1: every shared n-gram would be boilerplate
            raise SettingError("max_df", f"must be 0 (none) or >= 2, got {quote(self.max_df)}")
        for scope, options in self.loader_options.items():
            if not isinstance(options, Mapping):
                raise SettingError(
                    "loader_options", f"{quote(scope)}: expected a mapping of options"
                )


@dataclass(frozen=True)
class Decontaminated:
    """What `decontam` found and wrote: the engine's result (matrix, removals, `report()`),
    the sources as labelled, and the two files."""

    result: Any  # cppo_bench.decontam.DecontamResult
    sources: tuple[Any, ...]  # cppo_bench.decontam.Source, labels made distinct
    train_path: Path
    report_path: Path
    report: dict[str, Any]


def decontam(
    config: DecontamConfig | None = None,
    *,
    on_note: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> Decontaminated:
    """Load every source (the read / kept / dropped line of each, and the first malformed
    records skipped, told to `on_note`), match the evaluation problems in the training
    sources, write the filtered training set and overlap.json under `out`. `progress(total)`
    may give a context yielding a progress function for the statements fingerprinted."""
    from cppo_bench.benchmarks.loadreport import load_line
    from cppo_bench.decontam import DecontamConfig as Matching
    from cppo_bench.decontam import decontaminate
    from cppo_bench.decontam.sources import load_source_result, unique_labels

    c = take_config(DecontamConfig, config, settings)
    say = on_note or (lambda line: None)
    sources = []
    roles: tuple[tuple[Literal["train", "eval"], tuple[str, ...]], ...] = (
        ("train", c.train), ("eval", c.eval),
    )  # fmt: skip
    for role, specs in roles:
        for spec in specs:
            bench = spec.partition("=")[0]
            options = {**c.loader_options.get("", {}), **c.loader_options.get(bench, {})}
            source, loaded = load_source_result(spec, role, strict=c.strict, options=options)
            say(f"{role} {load_line(spec, loaded)}")
            for e in loaded.errors[:5]:
                say(f"skipped {e}")
            if len(loaded.errors) > 5:
                say(f"skipped {len(loaded.errors) - 5} more malformed records")
            if not source.problems:
                raise DataError(f"{spec}: no problems loaded")
            sources.append(source)
    sources = unique_labels(sources)
    matching = Matching(c.ngram, c.threshold, c.metric, c.max_df or None)
    total = sum(len(s.problems) for s in sources)
    with progress(total) if progress is not None else nullcontext(None) as advance:
        result = decontaminate(sources, matching, on_fingerprint=advance)
    train_path, report_path = result.write(c.out)
    return Decontaminated(result, tuple(sources), train_path, report_path, result.report())
