"""`cppo-bench report`: the study's tables and figures regenerated from stored runs.
`ReportConfig` holds every setting; `report` takes it (or its fields as keywords) and returns
what was computed and written. The engine is cppo_bench.report."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cppo_bench.api.config import setting, take_config
from cppo_bench.errors import DataError, SettingError
from cppo_bench.util.termsafe import quote

FORMATS = ("md", "tex", "csv")


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    """Every setting of `cppo-bench report` (docs/report.md)."""

    runs: str = setting("runs", "Run store written by `cppo-bench run`.")
    out: str = setting("reports", "Where tables, figures and index.html go.")
    check: bool = setting(
        False,
        "Only list the cells that lack runs and the `cppo-bench run` command that fills each; "
        "write nothing. Exit status 1 when any cell lacks runs.",
    )
    specs: str | None = setting(
        None,
        "Directory of table spec YAML files that replace (same file name) or add to the "
        "shipped specs.",
    )
    resamples: int = setting(1000, "Hierarchical bootstrap resamples behind the dagger marks.")
    seed: int = setting(0, "Seed of the bootstrap and of random first-K selection.")
    formats: tuple[Literal["md", "tex", "csv"], ...] = setting(
        FORMATS, "Table formats to write, comma-separated (index.html is always written)."
    )
    encoder: str | None = setting(
        None,
        "Sentence encoder for D_sem (name or local folder, e.g. all-MiniLM-L6-v2); without it "
        "D_sem cells stay empty with a footnote.",
    )
    judge_backend: str | None = setting(
        None,
        "Backend of the strategy judge for D_alg (e.g. hf, or package.module:factory); "
        "without it D_alg cells stay empty with a footnote.",
    )
    judge_model: str | None = setting(None, "Judge model for --judge-backend.")
    spread: Literal["study", "seed-std", "bootstrap-se"] = setting(
        "study",
        "The ± of every cell, named next to it. study: trained rows std over training seeds, "
        "inference-only rows bootstrap SE over problems (as `stats passk`); seed-std or "
        "bootstrap-se: that one for every row.",
    )
    show_empty: bool = setting(
        False,
        "Keep the rows, columns and tables no run fills (default: left out, the empty tables "
        "named in one line; --check lists the runs they need).",
    )
    study_numbers: bool = setting(
        False,
        "Also show the study's published tables (published_main, published_gemma) and a "
        "spec's external cells, in rows and columns of their own, each citing its source; by "
        "default a report shows only your runs.",
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """Paths as text; formats as "md,csv", too."""
        out = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
        if isinstance(out.get("formats"), str):
            out["formats"] = [f.strip() for f in out["formats"].split(",") if f.strip()]
        return out

    def __post_init__(self) -> None:
        if not self.formats:
            raise SettingError("formats", f"choose from {', '.join(FORMATS)} (comma-separated)")
        if self.resamples < 1:
            raise SettingError("resamples", f"must be >= 1, got {quote(self.resamples)}")


@dataclass(frozen=True)
class Report:
    """What `report` computed (and, without `check`, wrote): the counts the command prints,
    and the engine's own objects (`computed`: cppo_bench.report.build.Computed; `written`:
    its ReportResult, None with `check`) for a caller who wants more."""

    out: Path
    tables: int
    cells: int
    numbers: int  # cells that show a number
    partial: int
    degraded: int
    runs: int
    skipped_runs: int  # unreadable runs left out (named in the warnings)
    skipped_lines: int  # bad record lines left out
    missing: int  # cells that lack runs
    warnings: tuple[str, ...]
    check_text: str | None  # with `check`: the cells lacking runs and the commands that fill them
    figures: int
    skipped_figures: tuple[str, ...]
    computed: Any
    written: Any


def _encoder(name: str | None) -> Any:
    if name is None:
        return None
    from cppo_bench.diversity import load_encoder

    return load_encoder(name)


def report(
    config: ReportConfig | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> Report:
    """Compute the study's tables from the run store `runs` and, unless `check`, write them
    (Markdown, LaTeX, CSV), the figures and one index.html under `out`. Give a ReportConfig
    or its fields as keywords (``report(runs="runs", out="reports", formats=["md"])``).
    `progress` is told what is being computed. The judge (`judge_backend`) is opened only for
    the report and closed after it."""
    from cppo_bench.api.names import open_backend
    from cppo_bench.report import build_report, check_text, compute

    c = take_config(ReportConfig, config, settings)
    if not Path(c.runs).is_dir():  # before an encoder or a judge loads (the index says it too)
        raise DataError(f"{c.runs}: no run store here (pass --runs DIR)")
    specs = None if c.specs is None else Path(c.specs)
    judged = None if c.judge_backend is None else open_backend(c.judge_backend, c.judge_model, {})
    options = dict(specs_dir=specs, resamples=c.resamples, seed=c.seed, encoder=_encoder(c.encoder),
                   progress=progress, spread=c.spread, study_numbers=c.study_numbers)  # fmt: skip
    written = None
    with judged if judged is not None else nullcontext(None) as judge:
        if c.check:
            computed = compute(Path(c.runs), judge=judge, **options)
        else:
            written = build_report(Path(c.runs), Path(c.out), formats=c.formats, judge=judge,
                                   show_empty=c.show_empty, **options)  # fmt: skip
            computed = written.computed
    shown, index = computed.shown(), computed.index
    return Report(
        out=Path(c.out), tables=len(computed.tables), cells=computed.n_cells,
        numbers=shown["numbers"], partial=shown["partial"], degraded=shown["degraded"],
        runs=len(index.runs), skipped_runs=getattr(index, "skipped_runs", 0),
        skipped_lines=getattr(index, "skipped_lines", 0), missing=len(computed.missing),
        warnings=tuple(index.warnings),
        check_text=check_text(computed) if c.check else None,
        figures=0 if written is None else len(written.figures),
        skipped_figures=() if written is None else tuple(written.skipped_figures),
        computed=computed, written=written,
    )  # fmt: skip
