"""The report pipeline: specs + run store -> tables -> files (Markdown, LaTeX, CSV), figures,
index.html, and the list of runs that cells still lack.

Output layout (under --out):
    index.html            every table and figure on one page (offline, self-contained)
    report.md             every table in Markdown, in spec order
    tables/<name>.md|tex|csv
    figures/<name>.png|pdf
    manifests/<run path>.json            copies of the run manifests the page links
    missing.md, fill_missing.sh          the `--check` listing and its commands
Each build first removes the generated files of a previous build from these places (and
nothing else), so a table or figure that no longer exists does not linger.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files.outdir import OutDir
from cppo_bench.report.cells import CellEngine
from cppo_bench.report.check import MissingRun, format_check, missing_runs
from cppo_bench.report.escape import md_fenced, shell_command, shell_comment
from cppo_bench.report.model import Table
from cppo_bench.report.run_index import RunIndex
from cppo_bench.report.specs import TableSpec, load_specs
from cppo_bench.report.tables import build_table
from cppo_bench.util.registry import Registry
from cppo_bench.util.termsafe import quote

FORMATS = ("md", "tex", "csv")
Progress = Callable[[str], None]


@dataclass
class Computed:
    index: RunIndex
    engine: CellEngine
    specs: list[TableSpec]
    tables: list[Table]
    missing: list[MissingRun]

    @property
    def n_cells(self) -> int:
        return sum(len(t.rows) * len(t.columns) for t in self.tables)

    def shown(self) -> dict[str, int]:
        """Cells a reader sees a number in (not cells that merely have some run), and how
        many of those are partial (fewer problems than the benchmark's evaluation set) or
        computed from a degraded method (see cppo_bench.plan.validity)."""
        from cppo_bench.plan.validity import DEGRADED_MARK

        cells = [c for t in self.tables for _, _, c in t.cells() if not c.empty]
        return {
            "numbers": len(cells),
            "partial": sum(c.partial for c in cells),
            "degraded": sum(DEGRADED_MARK in c.mark for c in cells),
        }


@dataclass
class ReportResult:
    computed: Computed
    out: Path
    written: list[Path] = field(default_factory=list)
    figures: list[Any] = field(default_factory=list)
    skipped_figures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def compute(
    runs: Path,
    *,
    specs_dir: Path | None = None,
    resamples: int = 1000,
    seed: int = 0,
    encoder: Any = None,
    judge: Any = None,
    progress: Progress | None = None,
    spread: str = "study",
    study_numbers: bool = False,
) -> Computed:
    """Every table's cells (and the missing runs), without writing anything.
    `study_numbers`: also the study's published cells the specs name (footnoted)."""
    specs = load_specs(specs_dir)
    _validate(specs)
    index = RunIndex(runs)
    engine = CellEngine(
        index, resamples=resamples, seed=seed, encoder=encoder, judge=judge, spread=spread,
        study_numbers=study_numbers,
    )  # fmt: skip
    tables = []
    for spec in specs:
        if progress:
            progress(f"table {spec.name}")
        tables.append(build_table(spec, engine))
    return Computed(index, engine, specs, tables, missing_runs(tables, index, str(runs)))


def _validate(specs: list[TableSpec]) -> None:
    """Names a spec refers to must exist: one line naming the file otherwise."""
    from cppo_bench.report.cells import METRICS
    from cppo_bench.report.figures import FIGURE_KINDS
    from cppo_bench.report.tables import TABLE_KINDS

    for spec in specs:
        # (field, name, the registry that must hold it, what it is)
        checks: list[tuple[str, str, Registry[Any], str]] = [
            ("kind", spec.kind, TABLE_KINDS, "table kind")
        ]
        metrics = [*spec.columns.metrics, spec.metric]
        checks += [("metric", m.metric, METRICS, "metric") for m in metrics]
        checks += [("figures", f["kind"], FIGURE_KINDS, "figure kind") for f in spec.figures]
        for key, name, registry, what in checks:
            if name not in registry:
                known = ", ".join(registry.names())
                raise DataError(
                    f"{spec.path}: {key}: unknown {what} {quote(name)} (known: {known})"
                )


def check_text(computed: Computed) -> str:
    from cppo_bench.report.catalogue import format_catalogue

    return format_catalogue(computed) + format_check(computed.missing, computed.n_cells)


def _previous(out: OutDir) -> list[Path]:
    """The generated files of a previous build. They are removed only once this build has
    written its own (`_drop_stale`): a build the disk stops halfway loses no old file."""
    old = []
    for sub, patterns in (("tables", ("*.md", "*.tex", "*.csv")), ("figures", ("*.png", "*.pdf"))):
        for pattern in patterns:
            old += out.files(sub, pattern)
    manifests = out.folder("manifests")
    for top, _dirs, files in os.walk(manifests):  # follows no link to a folder
        old += [Path(top, name) for name in files]
    return old


def _drop_stale(out: OutDir, old: list[Path], written: set[Path]) -> None:
    for path in old:
        if path not in written:  # a table or figure that no longer exists does not linger
            out.remove(path.relative_to(out.root))


def _copy_manifests(computed: Computed, out: OutDir) -> dict[Path, str]:
    links = {}
    for run in computed.index.runs:
        try:
            rel = run.path.resolve().relative_to(computed.index.root.resolve())
        except ValueError:
            rel = Path(run.path.name)
        # not named manifest.json: an --out inside --runs must not look like more runs
        target = (Path("manifests") / rel.parent / f"{rel.name}.json").as_posix()
        # a sharded run read merged has no directory of its own yet: write its merged manifest
        out.write_text(target, json.dumps(dataclasses.asdict(run.manifest), indent=2,
                                          sort_keys=True))  # fmt: skip
        links[run.path] = target
    return links


def check_out(runs: Path, out: Path) -> None:
    """The report goes beside the run store, never into it: --out equal to --runs, or inside
    one of its runs (a folder holding a manifest.json), is one line before anything is
    written (its tables, figures and copied manifests would mix with the runs)."""
    from cppo_bench.store.runs import MANIFEST

    target = out.resolve()
    if target == runs.resolve():
        raise DataError(
            f"--out {out}: that is the run store itself (--runs {runs}); write the report "
            "into another folder, e.g. reports/"
        )
    for folder in (target, *target.parents):
        if (folder / MANIFEST).is_file():
            raise DataError(f"--out {out}: inside the run {folder}; write the report elsewhere")


def build_report(
    runs: Path,
    out: Path,
    *,
    specs_dir: Path | None = None,
    resamples: int = 1000,
    seed: int = 0,
    formats: Sequence[str] = FORMATS,
    encoder: Any = None,
    judge: Any = None,
    progress: Progress | None = None,
    spread: str = "study",
    show_empty: bool = False,
    study_numbers: bool = False,
) -> ReportResult:
    """Compute every table and write the report files under `out`. Rows and columns with
    no number are left out unless `show_empty` (report.compact); the study's published
    cells are shown only with `study_numbers`."""
    from cppo_bench.report import cppo_runs as cppo
    from cppo_bench.report import figures as figs
    from cppo_bench.report.html import PageInput, render_page
    from cppo_bench.report.render import RENDERERS, to_markdown

    unknown = [f for f in formats if f not in RENDERERS]
    if unknown:
        raise ValueError(f"unknown table format {quote(unknown[0])}; known: {', '.join(RENDERERS)}")
    check_out(Path(runs), Path(out))
    computed = compute(
        runs,
        specs_dir=specs_dir,
        resamples=resamples,
        seed=seed,
        encoder=encoder,
        judge=judge,
        progress=progress,
        spread=spread,
        study_numbers=study_numbers,
    )
    if not computed.index.runs and not cppo.find_pipelines(runs):
        # an all-empty report looks like a finished one; say what is wrong instead
        raise DataError(
            f"{runs}: no runs found (make them with `cppo-bench run`; "
            f"`cppo-bench report --runs {runs} --check` lists the ones the tables need)"
        )
    outdir = OutDir(out)  # every file below goes through it: no link followed, none left
    out = outdir.root
    previous = _previous(outdir)
    outdir.folder("figures")  # a link planted as figures/ is refused before anything is drawn
    result = ReportResult(computed, out)
    pipelines = cppo.find_pipelines(runs)
    # generated from the stage manifests, never hand-written (after the spec'd tables)
    extra_tables = [cppo.exposure_table(p, computed.index) for p in pipelines]
    from cppo_bench.report.plus_tables import plus_tables  # audits of `cppo-bench audit`

    extra_tables += plus_tables(runs, resamples=resamples, seed=seed)
    from cppo_bench.report.slice_tables import slice_tables  # LiveCodeBench's own view

    extra_tables += slice_tables(runs, resamples=resamples, seed=seed, spread=spread)
    if study_numbers:  # the study's own tables, in their own rows and columns
        from cppo_bench.report.published import published_tables

        extra_tables += published_tables()
    from cppo_bench.report.compact import prune

    full = [*computed.tables, *extra_tables]
    shown = [t if show_empty else prune(t) for t in full]
    table_files: dict[str, list[str]] = {}
    for whole, table in zip(full, shown, strict=True):
        for fmt in formats:
            # the CSV is the tidy data for tools: every cell, an empty one with its reason
            path = outdir.write_text(
                f"tables/{table.name}.{fmt}", RENDERERS[fmt](whole if fmt == "csv" else table)
            )
            result.written.append(path)
            table_files.setdefault(table.name, []).append(path.relative_to(out).as_posix())
    for spec, table in zip(computed.specs, computed.tables, strict=True):
        if spec.figures:
            if progress:
                progress(f"figures of {spec.name}")
            made, skipped = figs.table_figures(spec, table, computed.engine, out / "figures")
            result.figures += made
            result.skipped_figures += skipped
    pipeline_logs = [g for g in map(cppo.pipeline_gate_log, pipelines) if g is not None]
    for log in pipeline_logs:
        try:
            result.figures.append(figs.gate_diagnostics(log, out / "figures"))
        except figs.Skipped as why:
            result.skipped_figures.append(str(why))
    from cppo_bench.report.training_dynamics import training_figures

    made, skipped = training_figures(runs, out / "figures")
    result.figures += made
    result.skipped_figures += skipped
    for p in pipelines:
        try:
            result.figures.append(cppo.draw_curves(p, out / "figures"))
        except figs.Skipped as why:
            result.skipped_figures.append(str(why))
    report_md = out / "report.md"
    all_tables = shown
    outdir.write_text("report.md", "\n\n".join(to_markdown(t) for t in all_tables))
    outdir.write_text("missing.md", md_fenced(check_text(computed)))
    script = [
        "#!/usr/bin/env bash",
        "# Runs that table cells lack (from `cppo-bench report`).",
        "set -euo pipefail",
        "",
    ]
    for m in computed.missing:
        script += [shell_comment(c) for c in m.cells] + [
            # the one writer of the script: each line checked again as it is written
            shell_command(m.command)
            if m.trained is None
            else f"# (needs the checkpoint) {shell_command(m.command)}",
            "",
        ]
    outdir.write_text("fill_missing.sh", "\n".join(script))
    result.warnings = list(computed.index.warnings)
    page = PageInput(
        out=out,
        runs_root=Path(runs),
        tables=all_tables,
        figures=result.figures,
        skipped_figures=result.skipped_figures,
        missing=computed.missing,
        n_cells=computed.n_cells,
        runs=computed.index.runs,
        manifest_links=_copy_manifests(computed, outdir),
        table_files=table_files,
        warnings=result.warnings,
        settings={"bootstrap resamples": str(resamples), "seed": str(seed)},
        show_empty=show_empty,
    )
    outdir.write_text("index.html", render_page(page))
    result.written += [report_md, out / "missing.md", out / "fill_missing.sh", out / "index.html"]
    result.written += [p for f in result.figures for p in (f.png, f.pdf)]
    links = {out / target for target in page.manifest_links.values()}
    _drop_stale(outdir, previous, set(result.written) | links)
    return result
