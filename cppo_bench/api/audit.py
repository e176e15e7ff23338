"""`cppo-bench audit RUN...`: pass@K against pass@K+, the runs' accepted programs judged
again with an augmented test set (docs/augment.md). `AuditConfig` holds every setting;
`audit` takes it (or its fields as keywords)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cppo_bench.api.config import required, setting, take_config
from cppo_bench.errors import DataError, SettingError


@dataclass(frozen=True, kw_only=True)
class AuditConfig:
    """Every setting of `cppo-bench audit`."""

    runs: tuple[str, ...] = required("Run directories whose accepted programs are re-judged.")
    tests: str = required("The augmented test set (cppo-bench augment --out).")
    data: str | None = setting(
        None, "The runs' data [the manifest's data_source when it is a path]."
    )
    loader_options: dict[str, Any] = setting({}, "Loader option, as for `run` (KEY=VALUE).")
    strict: bool = setting(
        False, "Also run every original test, without stopping at the first failure."
    )
    workers: int | None = setting(None, "Parallel sandboxes (default: the CPUs).")
    resamples: int = setting(1000, "Bootstrap resamples of the pass@K - pass@K+ interval.")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """Paths as text; one run as a path, too."""
        out = dict(values)
        if isinstance(out.get("runs"), str | Path):
            out["runs"] = [out["runs"]]
        if isinstance(out.get("runs"), list | tuple):
            out["runs"] = [str(r) if isinstance(r, Path) else r for r in out["runs"]]
        return {k: str(v) if isinstance(v, Path) else v for k, v in out.items()}

    def __post_init__(self) -> None:
        if not self.runs:
            raise SettingError("runs", "give at least one run directory")
        if self.resamples < 1:
            raise SettingError("resamples", f"must be >= 1, got {self.resamples}")
        if self.workers is not None and self.workers < 1:
            raise SettingError("workers", f"must be >= 1, got {self.workers}")


@dataclass(frozen=True)
class Audit:
    """Each run's audit document (stored beside the run, `paths`), the pass@K vs pass@K+ rows
    (cppo_bench.augment.audit.PlusRow) and the weakest original tests: (bench, problem,
    accepted programs, of which the augmented tests reject)."""

    docs: tuple[dict[str, Any], ...]
    paths: tuple[Path, ...]
    rows: tuple[Any, ...]
    weakest: tuple[tuple[str, str, int, int], ...]


def audit(
    config: AuditConfig | None = None,
    *,
    on_note: Callable[[str], None] | None = None,
    progress: bool = False,
    **settings: Any,
) -> Audit:
    """Re-judge every accepted program of each run with the test set `tests` and store the
    audit beside the run; `on_note` hears one line per run audited, `progress` draws the
    verifier's bar. A run that cannot be audited (its data, its benchmark, the sandbox) is
    one DataError naming the run."""
    from cppo_bench.api.testsets import read_tests
    from cppo_bench.augment.audit import audit_run, plus_rows, store_audit, weakest
    from cppo_bench.augment.store import read_test_set
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.runner.rundata import reload_args
    from cppo_bench.store.runs import read_manifest, read_records
    from cppo_bench.util.registry import UnknownNameError
    from cppo_bench.verifier import SandboxError

    c = take_config(AuditConfig, config, settings)
    test_set = read_test_set(Path(c.tests))
    docs, paths = [], []
    loaded: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run in c.runs:
        run_dir = Path(run)
        try:
            manifest = read_manifest(run_dir)
            ts = read_tests(test_set, manifest.bench)
            data, run_options, _ = reload_args(manifest, c.data, c.loader_options)
            key = (manifest.bench, str(data), json.dumps(run_options, sort_keys=True))
            if key not in loaded:
                result = load_result(manifest.bench, data, **run_options)
                loaded[key] = {p.problem_id: p for p in result.problems}
            records = list(read_records(run_dir).values())
            doc = audit_run(manifest, records, loaded[key], ts, strict=c.strict,
                            workers=c.workers, progress=progress)  # fmt: skip
        except (DataError, UnknownNameError, SandboxError) as exc:
            raise DataError(f"{run_dir}: {exc}") from None
        path = store_audit(run_dir, doc)
        if on_note is not None:
            on_note(f"{run_dir}: {doc['programs_rejudged']} accepted programs re-judged, "
                    f"{doc['programs_failed']} fail the stronger tests -> {path}")  # fmt: skip
        docs.append(doc)
        paths.append(path)
    return Audit(tuple(docs), tuple(paths), tuple(plus_rows(docs, resamples=c.resamples)),
                 tuple(weakest(docs)))  # fmt: skip
