"""What `cppo-bench run` / `runs` show: the progress bar, the closing summary, the run list.
Rich is imported here only, when a command renders."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.util.termsafe import markup


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


class RichReporter:
    """Progress bar: problems done, pass@K so far, generation throughput."""

    def __init__(self, title: str, k: int, quiet: bool = False) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from cppo_bench.util.termsafe import console as Console  # escapes data it prints

        self.k = k
        self.passed = self.done = self.total = 0
        self.run_dir: Path | None = None
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("problems  pass@{task.fields[k]} {task.fields[passk]}"),
            TextColumn("{task.fields[tps]} tok/s  {task.fields[gens]} gens"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=quiet,
        )
        self.task = self.progress.add_task(title, total=None, k=k, passk="-", tps="-", gens=0)

    def __enter__(self) -> RichReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _passk(self) -> str:
        return f"{self.passed / self.done:.3f}" if self.done else "-"

    def start(self, run_dir: Path, total: int, done: list[Any]) -> None:
        self.run_dir, self.total = run_dir, total  # what an interrupt reports on
        self.done, self.passed = len(done), sum(r.passed for r in done)
        self.progress.update(self.task, total=total, completed=self.done, passk=self._passk())

    def generated(self, n: int) -> None:
        gens = self.progress.tasks[0].fields["gens"] + n
        self.progress.update(self.task, gens=gens)

    def stage_done(self, stats: Any) -> None:
        if stats.generate_s:
            self.progress.update(self.task, tps=f"{stats.tokens_per_s:.1f}")

    def chunk_done(self, records: list[Any], stats: Any) -> None:
        self.done += len(records)
        self.passed += sum(r.passed for r in records)
        self.progress.update(self.task, advance=len(records), passk=self._passk())
        self.stage_done(stats)


def print_summary(result: Any, skipped: int = 0) -> None:
    from rich.markup import escape
    from rich.table import Table

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    s, st, t, k = result.summary, result.stats, result.timings, result.manifest.k
    n = max(1, s["problems"])
    console = Console()
    console.print(f"[bold]run[/bold] {markup(result.run_dir)}", soft_wrap=True, highlight=False)
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    table.add_row(
        "problems",
        f"{s['problems']} ({result.new} new, {s['problems'] - result.new} already stored)"
        + (f"; {skipped} source records skipped" if skipped else ""),
    )
    solved = sum(r.passed for r in result.records)
    m = result.manifest
    total = m.dataset_size
    cover = ""
    if total and s["problems"] < total:  # a --limit or --shard run: not the whole benchmark
        cover = f"; n={s['problems']}/{total} partial: {total} problems in the benchmark"
    table.add_row(
        f"pass@{k}",
        f"{_fmt(s['pass_at_k'])} ({solved}/{s['problems']}) solved, seed {m.seed}{cover}",
    )
    if s["maj_at_k"] is not None:
        table.add_row(f"maj@{k}", _fmt(s["maj_at_k"]))
    validity = validity_text(result.records)
    if validity:
        table.add_row("plans", escape(validity))
    table.add_row(
        "tokens",
        f"planner {s['planner_tokens']} ({s['planner_tokens'] / n:.1f}/problem), "
        f"solver {s['solver_tokens']} ({s['solver_tokens'] / n:.1f}/problem)",
    )
    table.add_row(
        "generation",
        f"{st.hits} cached, {st.misses} generated: {st.generated_tokens} tokens in "
        f"{st.generate_s:.1f} s ({st.tokens_per_s:.1f} tok/s)",
    )
    # verification overlaps the next chunk's generation: only its wait is on the clock
    harness = t.total_s - t.load_s - st.generate_s - t.wait_s
    load = f"model load {t.load_s:.1f}, " if t.load_s >= 0.05 else ""
    table.add_row(
        "time",
        f"{t.total_s:.1f} s ({load}generate {st.generate_s:.1f}, verify {t.verify_s:.1f} of "
        f"which {t.wait_s:.1f} waited for, harness {harness:.1f})",
    )
    console.print(table)


def print_interrupted(run_dir: Path | None, total: int, resume: str) -> None:
    """What an interrupted run kept, and the command that resumes it (to stderr)."""
    import click

    from cppo_bench.store.gencache import GEN_CACHE
    from cppo_bench.store.runs import read_records

    if run_dir is None:
        click.echo("interrupted before any generation: nothing stored", err=True)
    else:
        try:
            records = len(read_records(run_dir))
        except DataError:
            records = 0
        cache = run_dir / GEN_CACHE
        gens = 0
        if cache.exists():
            with open(cache, "rb") as fh:
                gens = sum(1 for line in fh if line.endswith(b"\n"))
        click.echo(
            f"interrupted: stored {records} of {total} problems (verified, in records.jsonl) "
            f"and {gens} finished generations (in {GEN_CACHE}) under {run_dir}",
            err=True,
        )
    click.echo(f"resume with: {resume}", err=True)


def validity_text(records: list[Any]) -> str:
    """The tuple validity / fallback line of a run ('' for a method with nothing to say)."""
    from cppo_bench.plan.validity import run_tally

    return run_tally(records).text()


def print_seed_table(results: list[Any]) -> None:
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    values = [r.summary["pass_at_k"] for r in results if r.summary["pass_at_k"] is not None]
    k = results[0].manifest.k
    per_seed = ", ".join(f"seed {r.manifest.seed}: {_fmt(r.summary['pass_at_k'])}" for r in results)
    mean = statistics.fmean(values) if values else None
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    n = len(values)
    Console().print(
        f"pass@{k} over seeds: {_fmt(mean)} ± {std:.3f} (sd over {n} sampling seeds; {per_seed})",
        highlight=False,
    )


def run_rows(out: Path, bench: str | None = None, method: str | None = None) -> list[dict]:
    """One row per stored run (shards merged); an unreadable run is listed with the reason,
    not skipped, and so is what keeps a sharded run from merging."""
    from cppo_bench.store.index import scan
    from cppo_bench.runner.scoring import summarize
    from cppo_bench.plan.validity import run_tally

    store = scan(out)
    rows: list[dict] = [
        {"path": str(p), "status": f"unreadable: {why}"} for p, why in store.unreadable
    ]
    for run in store.runs:
        m = run.manifest
        if (bench and m.bench != bench) or (method and m.method != method):
            continue
        try:
            records = run.records()
        except DataError as exc:
            rows.append({"path": str(run.path), "status": f"unreadable: {exc}"})
            continue
        s = summarize(list(records.values()), m.k)
        tally = run_tally(records.values())
        total = max(len(m.problem_ids), m.selected)
        done = len(records)
        status = "complete" if done >= total and not run.problems else "incomplete"
        row = {
            "path": str(run.path),
            "bench": m.bench,
            "method": m.method,
            "model": m.model,
            "k": m.k,
            "seed": m.seed,
            "done": done,
            "total": total,
            "pass_at_k": s["pass_at_k"],
            "maj_at_k": s["maj_at_k"],
            "status": status,
            "created_at": m.created_at,
            "validity": tally.to_dict(),
            "validity_text": tally.text(),
        }
        if run.shards:
            row["shards"] = [str(p) for p, _ in run.shards]
            row["problems"] = list(run.problems)
        rows.append(row)
    return rows


def print_runs(rows: list[dict], out: Path) -> None:
    from rich.table import Table

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    console = Console()
    if not console.is_terminal:  # piped or logged: no width to fit, so never fold a cell
        console = Console(width=100_000)
    if not rows:
        console.print(f"no runs under {markup(out)}")
        return
    table = Table(title=f"runs under {markup(out)}")
    cols = ("bench", "method", "model", "K", "seed", "done", "pass@K", "plans", "status", "run")
    for col in cols:
        table.add_column(col, overflow="fold")
    for r in rows:
        name = Path(r["path"]).name  # bench/method/model are the other columns
        if "bench" not in r:
            table.add_row(*["-"] * 8, markup(r["status"]), markup(r["path"]))
            continue
        if r.get("shards"):
            name += f" ({len(r['shards'])} shards)"
            if r["problems"]:
                name += ": " + "; ".join(r["problems"])
        score = _fmt(r["pass_at_k"])
        if r["maj_at_k"] is not None:
            score += f" (maj {_fmt(r['maj_at_k'])})"
        table.add_row(
            markup(r["bench"]),
            markup(r["method"]),
            markup(r["model"]),
            str(r["k"]),
            str(r["seed"]),
            f"{r['done']}/{r['total']}",
            score,
            markup(r["validity_text"] or "-"),
            markup(r["status"]),
            markup(name),
        )
    console.print(table)
