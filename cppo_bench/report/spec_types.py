"""The types a table spec is parsed into (report/specs.py parses and checks them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cppo_bench.report.spec_extras import ExampleProblem, ExternalCell
from cppo_bench.util.sampling import MAX_K

BENCH_LABELS = {
    "apps": "APPS",
    "codecontests": "CodeContests",
    "lcb": "LCB",  # + the release its runs record (report.tables.bench_label)
    "lcb_execution": "LCB execution",
    "lcb_output_prediction": "LCB output pred.",
    "demo": "demo",
}
ESTIMATORS = ("first", "unbiased")
SELECTS = ("first", "last", "random")


@dataclass(frozen=True)
class Selector:
    """Which runs fill a row: the method, a subset of its method_options, and the tag of the
    trained checkpoint (manifest ``extra["trained"]``; None = the untrained model)."""

    label: str
    method: str
    options: dict[str, Any] = field(default_factory=dict)
    trained: str | None = None
    group: str = "baseline"  # rows of the significance spec's candidate group get daggers
    estimator: str = "first"  # pass@K from runs with more attempts than K
    select: str = "first"  # first-K rule: which branches of the last tuple count
    seeds: tuple[int, ...] | None = None  # expected seeds (for --check); None: table default

    @property
    def is_trained(self) -> bool:
        return self.trained is not None

    def same_runs(self, other: Selector) -> bool:
        """Whether both select the same runs (labels and scoring options aside)."""
        return (self.method, self.options, self.trained) == (
            other.method,
            other.options,
            other.trained,
        )


MAX_DIGITS = 12  # past float64's ~16 significant digits nothing printed is real


@dataclass(frozen=True)
class MetricSpec:
    metric: str  # a name in cppo_bench.report.cells.METRICS
    k: int = 4
    estimator: str | None = None  # overrides the row's estimator
    label: str | None = None
    digits: int | None = None
    derive: bool | None = None  # read off runs with more attempts; None: the table's derive_k

    def __post_init__(self) -> None:
        # a spec comes from a stranger: digits 100000000 printed 100 MB a cell
        if self.digits is not None and not 0 <= self.digits <= MAX_DIGITS:
            raise ValueError(f"digits: {self.digits} is outside 0..{MAX_DIGITS}")
        if not 1 <= self.k <= MAX_K:
            raise ValueError(f"k: {self.k} is outside 1..{MAX_K}")


@dataclass(frozen=True)
class ColumnsSpec:
    models: tuple[str, ...] | None = None  # None: every model found in the run store
    model_labels: dict[str, str] = field(default_factory=dict)
    benches: tuple[str, ...] = ()
    other_benches: bool = False  # add benches the store holds that the list lacks
    metrics: tuple[MetricSpec, ...] = (MetricSpec("pass"),)
    average: bool = False  # an "Avg." column per model and metric, over the benches


@dataclass(frozen=True)
class Significance:
    # Row groups tested, in order: each group's rows against the strongest row of the groups
    # before it and of the rows in no listed group (one group: against every other row).
    # ("passk", "cppo") tests the study's ordering: pass@K-aware > the rest, CPPO > all.
    candidates: tuple[str, ...] = ("cppo",)
    alpha: float = 0.05
    mark: str = "†"
    metrics: tuple[str, ...] = ("pass", "maj")
    p_values: bool = False  # each tested cell also footnotes its p and the baseline it beat

    def baselines_of(self, group: str) -> tuple[str, ...]:
        """The candidate groups a row of `group` is NOT compared with (itself and later)."""
        return self.candidates[self.candidates.index(group) :]


@dataclass(frozen=True)
class Comparison:
    a: Selector
    b: Selector | None  # None: the strongest of `strongest` in each cell
    strongest: tuple[Selector, ...] = ()


@dataclass(frozen=True)
class Decomposition:
    label: str
    baseline: Selector
    iid: Selector
    joint: Selector


@dataclass(frozen=True)
class TableSpec:
    name: str
    title: str
    kind: str  # a name in cppo_bench.report.tables.TABLE_KINDS
    path: str  # the file it came from (for error messages)
    caption: str = ""
    order: int = 100
    columns: ColumnsSpec = field(default_factory=ColumnsSpec)
    rows: tuple[Selector, ...] = ()
    significance: Significance | None = None
    trained_seeds: tuple[int, ...] = (0, 1, 2)
    inference_seeds: tuple[int, ...] = (0,)
    derive_k: bool = False  # fill pass@K from runs with more attempts when no k=K run exists
    metric: MetricSpec = field(default_factory=lambda: MetricSpec("pass"))
    comparisons: tuple[Comparison, ...] = ()
    decompositions: tuple[Decomposition, ...] = ()
    figures: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    study: tuple[str, ...] = ()  # the study's captions this spec reproduces
    fill: str = ""  # tables not filled from runs: what fills them
    external: tuple[ExternalCell, ...] = ()
    problems: tuple[ExampleProblem, ...] = ()
    # grid: also the hierarchical-bootstrap percentile interval of each cell's mean at this
    # confidence (problems and training seeds resampled), shown in place of the ±
    interval: float | None = None

    def expected_seeds(self, row: Selector) -> tuple[int, ...]:
        if row.seeds is not None:
            return row.seeds
        return self.trained_seeds if row.is_trained else self.inference_seeds
