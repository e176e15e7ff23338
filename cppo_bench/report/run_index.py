"""The run store as the report sees it: every run's manifest, records loaded on demand, and
the runs that fill a table cell (a row selector x model x benchmark x K, across seeds).

Conventions read from a manifest's ``extra`` (written by ``cppo-bench run`` for checkpoints):
``trained`` tags a trained checkpoint (e.g. "cppo", "pkpo"), ``base_model`` is the model the
checkpoint was trained from (the table column it belongs in), ``train_seed`` its training
seed (the seed a trained cell's mean ± std is over). Without them a run is the untrained
``model`` and its seed is the sampling seed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.report.specs import Selector
from cppo_bench.store.index import StoredRun, preference, scan
from cppo_bench.store.runs import ProblemRecord, RunManifest, read_records

# What a method option absent from an older manifest means (the run command's defaults).
DEFAULT_OPTIONS: dict[str, Any] = {"inference": "joint", "select": "first"}


@dataclass(frozen=True)
class RunRef:
    path: Path
    manifest: RunManifest
    stored: StoredRun | None = field(default=None, compare=False, repr=False)  # shards merged

    def read_records(self) -> dict[str, ProblemRecord]:
        return self.stored.records() if self.stored is not None else read_records(self.path)

    def record_count(self) -> int:
        try:
            return len(self.read_records())
        except DataError:
            return 0

    @property
    def column_model(self) -> str:
        return str(self.manifest.extra.get("base_model") or self.manifest.model)

    @property
    def trained(self) -> str | None:
        tag = self.manifest.extra.get("trained")
        return str(tag) if tag else None

    @property
    def seed(self) -> int:
        return int(self.manifest.extra.get("train_seed", self.manifest.seed))

    @property
    def complete(self) -> bool:
        return self.manifest.status == "complete"

    def matches(self, row: Selector) -> bool:
        m = self.manifest
        if m.method != row.method or self.trained != row.trained:
            return False
        for key, want in row.options.items():
            have = m.method_options.get(key, DEFAULT_OPTIONS.get(key))
            if have != want:
                return False
        return True


@dataclass
class CellRuns:
    """The runs of one cell: one per seed, plus the duplicates that lost the tie-break."""

    by_seed: dict[int, RunRef] = field(default_factory=dict)
    ignored: list[RunRef] = field(default_factory=list)
    k: int | None = None  # the K of the runs used (None: no runs)


class RunIndex:
    """Manifests of every run under `root`; records are read once, when a cell needs them."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise DataError(f"{self.root}: no run store here (pass --runs DIR)")
        store = scan(self.root)  # the reader `runs` and `stats` use too: shards merged
        self.runs: list[RunRef] = [RunRef(r.path, r.manifest, r) for r in store.runs]
        self.warnings: list[str] = store.warnings
        self._records: dict[Path, dict[str, ProblemRecord]] = {}

    def records(self, run: RunRef) -> dict[str, ProblemRecord]:
        if run.path not in self._records:
            try:
                self._records[run.path] = run.read_records()
            except DataError as exc:
                self.warnings.append(f"skipped records: {exc}")
                self._records[run.path] = {}
            if run.stored is not None:  # records that failed the schema: named, not counted
                self.warnings += run.stored.skipped
        return self._records[run.path]

    def models(self, benches: Iterable[str] | None = None) -> list[str]:
        wanted = set(benches) if benches is not None else None
        return sorted(
            {r.column_model for r in self.runs if wanted is None or r.manifest.bench in wanted}
        )

    def benches(self) -> list[str]:
        return sorted({r.manifest.bench for r in self.runs})

    def select(
        self, row: Selector, model: str | None, bench: str, k: int, derive: bool = False
    ) -> CellRuns:
        """Runs with exactly K attempts; with `derive`, else those of the smallest K' > K."""
        if model is None:
            return CellRuns()
        pool = [
            r
            for r in self.runs
            if r.manifest.bench == bench and r.column_model == model and r.matches(row)
        ]
        ks = sorted({r.manifest.k for r in pool})
        if k in ks:
            use_k = k
        elif derive and any(x > k for x in ks):
            use_k = min(x for x in ks if x > k)
        else:
            return CellRuns()
        cell = CellRuns(k=use_k)
        for run in sorted((r for r in pool if r.manifest.k == use_k), key=self._preference):
            if run.seed in cell.by_seed:
                cell.ignored.append(run)
            else:
                cell.by_seed[run.seed] = run
        return cell

    def _preference(self, run: RunRef) -> tuple:
        # several runs of one seed (older stores made one per --limit): the rule stats uses
        return preference(run.stored) if run.stored is not None else (not run.complete,)
