"""What `cppo-bench run` / `runs` show: the progress bar, the closing summary, the run list.
Rich is imported here only, when a command renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.util.termsafe import echo, markup


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


class RichReporter:
    """Progress of a run: problems done, pass@K so far, the generation stage running,
    generations and their throughput. A rich bar on a terminal; without one (nohup, Slurm)
    the same facts as a plain line at a steady interval (`cppo_bench.util.progress.Ticker`)."""

    def __init__(self, title: str, k: int, quiet: bool = False, **ticker: Any) -> None:
        from cppo_bench.util.progress import Ticker, is_terminal

        self.title, self.k, self.quiet = title, k, quiet
        self.passed = self.done = self.total = self.gens = 0
        self.tps, self.stage = "-", ""
        self.started = False  # start() heard: the data and the model are loaded
        self.in_stage = self.stage_gens = 0  # the running batch's requests, and those done
        self.run_dir: Path | None = None
        self.progress: Any = None
        self.ticker: Ticker | None = None
        if not is_terminal(ticker.get("stream")):
            if not quiet:
                self.ticker = Ticker(self.line, **ticker)
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from cppo_bench.util.termsafe import console as Console  # escapes data it prints

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("problems  pass@{task.fields[k]} {task.fields[passk]}"),
            TextColumn("{task.fields[stage]}{task.fields[tps]} tok/s  {task.fields[gens]} gens"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=quiet,
        )
        self.task = self.progress.add_task(
            markup(title), total=None, k=k, passk="-", tps="-", gens=0, stage=""
        )

    def line(self, elapsed: float) -> str:
        """The plain progress line (a log has no bar): only what is known. Before the run
        starts, that the data and the model are loading; during a batch, its requests in
        flight; a throughput once one batch has finished."""
        from cppo_bench.util.progress import clock_text

        clock = f"elapsed {clock_text(elapsed)}"
        if not self.started:
            return f"{self.title}: loading the data and the model, {clock}"
        parts = [f"{self.done}/{self.total} problems", f"pass@{self.k} {self._passk()}"]
        if self.stage:
            flight = self.in_stage - self.stage_gens
            parts.append(f"stage {self.stage}: {flight} request(s) in flight")
        if self.gens:
            parts.append(f"{self.gens} gens")
        if self.tps != "-":
            parts.append(f"{self.tps} tok/s")
        return f"{self.title}: {', '.join(parts)}, {clock}"

    def _show(self, **change: Any) -> None:
        if self.progress is not None:
            self.progress.update(self.task, **change)
        elif self.ticker is not None:
            self.ticker.tick()

    def __enter__(self) -> RichReporter:
        if self.progress is not None:
            self.progress.start()
        elif self.ticker is not None:
            self.ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
        elif self.ticker is not None:
            ticker, self.ticker = self.ticker, None  # stopped once, even if called twice
            ticker.stop()

    def _passk(self) -> str:
        return f"{self.passed / self.done:.3f}" if self.done else "-"

    def start(self, run_dir: Path, total: int, done: list[Any]) -> None:
        self.run_dir, self.total = run_dir, total  # what an interrupt reports on
        self.started = True
        self.done, self.passed = len(done), sum(r.passed for r in done)
        self._show(total=total, completed=self.done, passk=self._passk())

    def stage_started(self, stage: str, n: int) -> None:
        """A batch of `n` generations of prompt `stage` begins (PlanSearch's stages...)."""
        self.stage = f"{stage} x{n}"
        self.in_stage, self.stage_gens = n, 0
        self._show(stage=f"{markup(self.stage)}  ")

    def generated(self, n: int) -> None:
        self.gens += n
        self.stage_gens = min(self.in_stage, self.stage_gens + n)
        self._show(gens=self.gens)

    def stage_done(self, stats: Any) -> None:
        if stats.generate_s:
            self.tps = f"{stats.tokens_per_s:.1f}"
            self._show(tps=self.tps)

    def chunk_done(self, records: list[Any], stats: Any) -> None:
        self.done += len(records)
        self.passed += sum(r.passed for r in records)
        self._show(advance=len(records), passk=self._passk())
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
    from cppo_bench.api.run_summary import tests_line, validity_text

    tests = tests_line(m)
    if tests:
        table.add_row("tests", escape(tests))
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
    from cppo_bench.api.run_summary import kept

    if run_dir is None:
        echo("interrupted before any generation: nothing stored", err=True)
    else:
        got = kept(run_dir)
        echo(
            f"interrupted: stored {got.records} of {total} problems (verified, in records.jsonl) "
            f"and {got.generations} finished generations (in {got.cache_name}) under {run_dir}",
            err=True,
        )
    echo(f"resume with: {resume}", err=True)


def print_seed_table(results: list[Any]) -> None:
    """The seeds' pass@K with the study's one uncertainty rule (api.run_summary.seed_summary)."""
    from cppo_bench.api.run_summary import seed_summary
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    Console().print(seed_summary(results), highlight=False)


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
        if r.get("rejudged_from"):
            name += f" (re-judged from {Path(r['rejudged_from']).name})"
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
