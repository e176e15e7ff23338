"""`cppo-bench report --check`: the cells that lack runs, and the `cppo-bench run` command
that fills each (one command per missing run, listing every cell it fills)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from cppo_bench.backends.default_model import DEFAULT_MODEL
from cppo_bench.report.escape import shell_arg, shell_command
from cppo_bench.report.model import CellRequest, Table
from cppo_bench.report.run_index import RunIndex
from cppo_bench.store.runs import RunManifest
from cppo_bench.util.termsafe import safe

TUPLE_SIZE = 4  # a run of K >= 4 attempts also fills the pass@K' < K cells of a sweep


@dataclass
class MissingRun:
    command: str
    trained: str | None  # checkpoint tag: the command needs that checkpoint as --model
    cells: list[str] = field(default_factory=list)  # "table: row · model · bench"


# method options `cppo-bench run` has a flag of their own; any other goes through -m KEY=VAL
RUN_FLAGS = ("inference", "select", "fill", "strategies")


def option_flags(options: dict) -> list[str]:
    """Method options as `cppo-bench run` arguments."""
    return [
        f"--{key} {shell_arg(value)}" if key in RUN_FLAGS else f"-m {shell_arg(f'{key}={value}')}"
        for key, value in sorted(options.items())
    ]


def _template_flags(template: RunManifest | None) -> list[str]:
    """What makes a new run comparable with its neighbours: the same data, problems,
    backend and sampling as a stored run of the same benchmark and model."""
    if template is None:
        return []
    from cppo_bench.errors import DataError
    from cppo_bench.runner.rundata import source_of

    try:  # the stored run's data and loader options, as recorded (not as typed)
        src = source_of(template)
    except DataError:  # its file changed since: the command cannot promise that data
        src = None
    flags = []
    if src is not None and src.data is not None:
        flags.append(f"--data {shell_arg(src.data)}")
    for key, value in sorted((src.options if src is not None else {}).items()):
        flags.append(f"-o {shell_arg(f'{key}={value}')}")
    flags += [f"--limit {len(template.problem_ids)}", f"--backend {shell_arg(template.backend)}"]
    for key in ("temperature", "top_p", "max_tokens"):
        if key in template.sampling:
            flags.append(f"--{key.replace('_', '-')} {shell_arg(template.sampling[key])}")
    return flags


def run_commands(req: CellRequest, runs_dir: str, template: RunManifest | None = None) -> list[str]:
    """The commands that fill a request: one per seed for a trained checkpoint (each seed is
    its own checkpoint), else one for all missing seeds."""
    row = req.row
    k = max(req.k, TUPLE_SIZE) if req.derive else req.k
    # every word from data is quoted; a name with a control character is refused
    base = [
        "cppo-bench run",
        f"--method {shell_arg(row.method)}",
        f"--bench {shell_arg(req.bench)}",
    ]
    tail = [
        *_template_flags(template),
        *option_flags(row.options),
        f"--runs {shell_arg(runs_dir)}",
    ]
    if row.trained is None:
        # the embedded model's label is not a loadable --model: its runs are made without one
        named = req.model and req.model != DEFAULT_MODEL
        model = [f"--model {shell_arg(req.model)}"] if named else []
        seeds = ",".join(map(str, req.missing_seeds))
        return [shell_command(" ".join(base + model + [f"--k {k}", f"--seeds {seeds}"] + tail))]
    out = []
    for seed in req.missing_seeds:
        ckpt = f"<{row.trained} checkpoint, training seed {seed}>"
        tags = [f"--trained {shell_arg(row.trained)}", f"--train-seed {shell_arg(seed)}"]
        if req.model:
            tags.append(f"--base-model {shell_arg(req.model)}")
        words = base + [f"--model {shell_arg(ckpt)}", f"--k {k}", f"--seeds {seed}"] + tags + tail
        out.append(shell_command(" ".join(words)))
    return out


def missing_runs(tables: Iterable[Table], index: RunIndex, runs_dir: str) -> list[MissingRun]:
    """Every run some cell lacks, deduplicated, in table order."""
    found: dict[str, MissingRun] = {}
    for table in tables:
        for row, col, cell in table.cells():
            req = cell.request
            if req is None:
                continue
            where = f"{table.name}: " + " · ".join(
                [*row.labels, *[h for h in col.header if h not in row.labels]]
            )
            template = _template(index, req.bench, req.model)
            for cmd in run_commands(req, runs_dir, template):
                entry = found.setdefault(cmd, MissingRun(cmd, req.row.trained))
                if where not in entry.cells:
                    entry.cells.append(where)
    return list(found.values())


def _template(index: RunIndex, bench: str, model: str | None) -> RunManifest | None:
    """A stored run of this benchmark and model (complete ones first); None if none."""
    runs = [r for r in index.runs if r.manifest.bench == bench and r.column_model == model]
    runs.sort(key=lambda r: (not r.complete, r.trained is not None, str(r.path)))
    return runs[0].manifest if runs else None


def format_check(missing: list[MissingRun], n_cells: int) -> str:
    """Plain-text listing for the terminal (and missing.md)."""
    if not missing:
        return f"All {n_cells} table cells have their runs.\n"
    filled = sorted({c for m in missing for c in m.cells})
    lines = [
        f"{len(filled)} of {n_cells} table cells lack runs; "
        f"{len(missing)} `cppo-bench run` command(s) fill them.",
        "Add --data PATH for a benchmark read from a local copy. Trained rows need the "
        "checkpoint of that method and training seed as --model.",
        "",
    ]
    for m in missing:
        # a trained row's command needs a checkpoint path in place of its placeholder, so it
        # is shown commented out, as in fill_missing.sh: every uncommented line runs as is
        lines.append(m.command if m.trained is None else f"# (needs the checkpoint) {m.command}")
        shown = m.cells[:6]
        lines += [f"    fills {safe(c)}" for c in shown]
        if len(m.cells) > len(shown):
            lines.append(f"    ... and {len(m.cells) - len(shown)} more cells")
        lines.append("")
    return "\n".join(lines)
