"""`cppo-bench verify`: run programs (or the problems' reference solutions) through the
sandboxed verifier and summarise the verdicts."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import click

from cppo_bench.cli.options import bench_options, parse_kv, runs_option
from cppo_bench.cli.testsets import apply_tests, load_tests, tests_option
from cppo_bench.util.termsafe import echo, markup, quote, safe

RESULT_FIELDS = ("verdict", "passed", "tests_passed", "tests_total", "time_s", "first_failed",
                 "detail", "cpu_s", "peak_memory_mb", "sandbox")  # fmt: skip


MAX_PROGRAM_LINE = 64 << 20  # one {"problem_id", "code"} line


def _program_lines(path: Path) -> list[tuple[int, str | None, str | None]]:
    """(line number, text or None, error) per line: split on \\n only, each line decoded on
    its own, so one bad line is named and the others are still read."""
    from cppo_bench.files import userfiles

    return [(ln.lineno, ln.text, ln.error) for ln in userfiles.lines(path, MAX_PROGRAM_LINE)]


def _limits(time_s: float | None, memory_mb: int | None, output_mb: int | None) -> dict:
    """The limit flags given, checked by cppo_bench.verifier.Limits (the schema's ranges)."""
    from cppo_bench.errors import DataError
    from cppo_bench.verifier import Limits

    given = {"time_s": time_s, "memory_mb": memory_mb, "output_mb": output_mb}
    limits: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    try:
        Limits(**limits)
    except DataError as exc:
        raise DataError(str(exc).replace("limit time_s", "--time-limit")
                                   .replace("limit memory_mb", "--memory-mb")
                                   .replace("limit output_mb", "--output-mb")) from None  # fmt: skip
    return limits


def problem_index(problems: list[Any]) -> tuple[dict[str, Any], set[str]]:
    """problem_id and uid -> problem, and the keys naming two different problems (a
    problem_id equal to another's uid): a program for such a key is refused, never judged
    against whichever problem came last."""
    index: dict[str, Any] = {}
    ambiguous: set[str] = set()
    for p in problems:
        for key in (p.problem_id, p.uid):
            if key in index and index[key] is not p:
                ambiguous.add(key)
            index.setdefault(key, p)
    return {k: v for k, v in index.items() if k not in ambiguous}, ambiguous


def read_programs(
    path: Path, problems: dict[str, Any], ambiguous: AbstractSet[str] = frozenset()
) -> tuple[list[dict], list[str]]:
    """(records with a known problem, errors naming FILE:LINE). Bad lines never stop the rest."""
    from cppo_bench.files.jsonio import loads

    records, errors = [], []
    for lineno, line, why in _program_lines(path):
        where = f"{path}:{lineno}"
        if line is None:
            errors.append(f"{where}: {why}")
            continue
        if not line.strip():
            continue
        try:
            record = loads(line)
        except ValueError as exc:
            errors.append(f"{where}: not valid JSON ({getattr(exc, 'msg', exc)})")
            continue
        if not isinstance(record, dict) or "problem_id" not in record or "code" not in record:
            errors.append(f"{where}: expected an object with 'problem_id' and 'code'")
            continue
        if not isinstance(record["code"], str):
            errors.append(f"{where}: 'code' must be a string")
            continue
        if not isinstance(record["problem_id"], (str, int)) or isinstance(
            record["problem_id"], bool
        ):
            errors.append(f"{where}: 'problem_id' must be a string or an integer")
            continue
        pid = str(record["problem_id"])
        if pid in ambiguous:
            errors.append(f"{where}: problem id {quote(pid)} names two different problems; refused")
            continue
        if pid not in problems:
            errors.append(f"{where}: unknown problem id {quote(pid)}")
            continue
        records.append(dict(record, problem_id=pid))
    return records, errors


def named_problems(path: Path) -> list[str]:
    """The problem ids a programs file names (lines that are not such records are left to
    `read_programs` to report)."""
    from cppo_bench.files.jsonio import loads

    try:
        lines = _program_lines(path)
    except click.ClickException:
        return []
    ids: set[str] = set()
    for _, line, _ in lines:
        try:
            record = loads(line) if line is not None else None
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("problem_id"), (str, int)):
            ids.add(str(record["problem_id"]))
    return sorted(ids)


def selection_for(bench: str, options: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """Loader options that load the problems the programs name: a loader that selects by id
    gets those ids (and every difficulty), instead of its default slice, unless the user
    chose a selection of their own."""
    import inspect

    from cppo_bench.benchmarks import BENCHMARKS

    params = inspect.signature(BENCHMARKS.get(bench).load).parameters
    if not ids or "ids" not in params or "ids" in options:
        return options
    chosen = dict(options, ids=ids)
    if "difficulty" in params:
        chosen.setdefault("difficulty", "all")
    return chosen


def reference_records(problems: dict[str, Any]) -> list[dict]:
    seen, out = set(), []
    for problem in problems.values():
        if id(problem) in seen:
            continue
        seen.add(id(problem))
        for k, code in enumerate(problem.reference_solutions):
            out.append({"problem_id": problem.problem_id, "reference_index": k, "code": code})
    return out


def summary_table(rows: list[dict], reference: bool):
    from rich.table import Table

    counts = Counter(r["verdict"] for r in rows)
    n = len(rows)
    title = "reference solutions" if reference else "programs"
    table = Table(title=f"cppo-bench verify: {n} {title}")
    table.add_column("verdict")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    for verdict in ("AC", "WA", "TLE", "MLE", "RE", "CE", "EMPTY"):
        if counts.get(verdict):
            table.add_row(verdict, str(counts[verdict]), f"{counts[verdict] / n:.1%}")
    solved = {r["problem_id"] for r in rows if r["passed"]}
    problems = {r["problem_id"] for r in rows}
    table.add_section()
    table.add_row(
        "pass rate", f"{counts.get('AC', 0)}/{n}", f"{counts.get('AC', 0) / max(n, 1):.1%}"
    )
    table.add_row("problems solved", f"{len(solved)}/{len(problems)}",
                  f"{len(solved) / max(len(problems), 1):.1%}")  # fmt: skip
    return table


def failure_table(rows: list[dict], limit: int = 25):
    from rich.table import Table

    failed = [r for r in rows if not r["passed"]]
    table = Table(title=f"failing reference solutions ({len(failed)})")
    for col in ("problem", "ref", "verdict", "detail"):
        table.add_column(col, overflow="fold")
    for r in failed[:limit]:
        table.add_row(markup(r["problem_id"]), str(r.get("reference_index", "")),
                      markup(r["verdict"]), markup(str(r["detail"])[:120]))  # fmt: skip
    if len(failed) > limit:
        table.add_row("...", "", "", f"{len(failed) - limit} more in the output file")
    return table


def rejudge_run(run_dir: Path, into: Path | None, bench: str | None, data_path: str | None,
                option_pairs: tuple[str, ...], tests_dir: Path | None,
                workers: int | None) -> None:  # fmt: skip
    """`verify --run`: cppo_bench.runner.rejudge, then what changed."""
    from cppo_bench.api import rejudge
    from cppo_bench.benchmarks.loadreport import load_line
    from cppo_bench.store.runs import read_manifest

    source = read_manifest(run_dir)
    if bench is not None and bench != source.bench:
        raise click.UsageError(f"--bench {bench}, but {run_dir} is a {source.bench} run")
    test_set = load_tests(tests_dir, source.bench)
    done = rejudge(run_dir, out=into, data=data_path, loader_options=parse_kv(option_pairs),
                   tests=test_set, workers=workers, progress=True,
                   on_loaded=lambda r: echo(load_line(source.bench, r), err=True))  # fmt: skip

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    echo(f"re-judged {safe(run_dir)} into {safe(done.run_dir)} (the source is unchanged)")
    echo(
        f"pass@{done.manifest.k}: {fmt(done.before)} -> {fmt(done.after)} over "
        f"{len(done.records)} problems; {done.changed} attempts changed pass/fail"
    )


@click.command("verify")
@bench_options(required=False)
@tests_option
@click.option(
    "--run",
    "run_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Judge a stored run's completions again (today's verifier, --tests) into a NEW run "
    "beside it (or under --runs); the stored run is never changed.",
)
@runs_option(
    "--into",
    default=None,
    help="--run: the run store the re-judged run goes to (default: the source's store).",
)  # --into: the old spelling
@click.option(
    "--programs",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSONL, one {"problem_id": ..., "code": ...} per line (code may be a '
    "whole model completion).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write one result line per program here (default: standard output).",
)
@click.option("--workers", type=click.IntRange(min=1), help="Parallel sandboxes [cores].")
@click.option("--all-tests", is_flag=True, help="Run every test, not just up to the first failure.")
@click.option(
    "--reference",
    is_flag=True,
    help="Verify the problems' own reference solutions (a data-quality audit).",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Verdict cache: re-verifying an identical program never re-executes it.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Default per-test CPU seconds for problems without their own [10].",
)
@click.option(
    "--memory-mb",
    type=click.IntRange(min=16),
    help="Default address-space limit for problems without their own [256].",
)
@click.option("--output-mb", type=click.IntRange(min=1), help="Output cap per test [64].")
@click.option(
    "--unsafe-no-sandbox",
    is_flag=True,
    help="Run programs even where no sandbox mode can make them unprivileged (as root, "
    "unisolated). Only for trusted code.",
)
def verify(bench: str, data_path: str | None, option_pairs: tuple[str, ...],
           programs: Path | None, out: Path | None, workers: int | None, all_tests: bool,
           reference: bool, cache_dir: Path | None, time_limit: float | None,
           memory_mb: int | None, output_mb: int | None,
           unsafe_no_sandbox: bool = False, tests_dir: Path | None = None,
           run_dir: Path | None = None, runs: Path | None = None) -> None:  # fmt: skip
    """Verify programs against a benchmark's hidden tests in the sandbox, or (--run) judge a
    stored run again into a new run."""
    from cppo_bench import api
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    limits = _limits(time_limit, memory_mb, output_mb)  # before any data loads
    if unsafe_no_sandbox:  # read by every sandbox this process starts (launch.UNSAFE_ENV)
        os.environ["CPPO_UNSAFE_NO_SANDBOX"] = "1"
    if run_dir is not None:
        if programs is not None or reference:
            raise click.UsageError("--run judges a stored run: no --programs or --reference")
        rejudge_run(run_dir, runs, bench, data_path, option_pairs, tests_dir, workers)
        return
    if runs is not None:
        raise click.UsageError("--runs goes with --run")
    if bench is None:
        raise click.UsageError("Missing option '--bench' (or give --run DIR)")
    if reference == (programs is not None):
        raise click.UsageError("give exactly one of --programs FILE and --reference")
    err = Console(stderr=True)
    test_set = load_tests(tests_dir, bench)  # before the data: a wrong set fails fast
    options = parse_kv(option_pairs)
    if programs is not None:
        options = selection_for(bench, options, named_problems(programs))
    loaded = api.data.load_result(bench, data_path, unique=False, **options)
    for skipped in loaded.errors[:10]:
        echo(f"skipped record: {safe(skipped)}", err=True)
    problems, ambiguous = problem_index(apply_tests(loaded.problems, test_set))
    errors: list[str] = []
    if programs is None:  # --reference (exactly one of the two: checked above)
        records = reference_records(problems)
    else:
        records, errors = read_programs(programs, problems, ambiguous)
    for e in errors:
        echo(f"error: {safe(e)}", err=True)
    if not records:
        # nothing to verify is an input error, not an empty success
        what = f"{programs}: no programs to verify" if programs else "no reference solutions"
        raise click.ClickException(what + (f" ({len(errors)} bad line(s))" if errors else ""))
    results = api.verify([problems[r["problem_id"]] for r in records],
                         [r["code"] for r in records], workers=workers, all_tests=all_tests,
                         cache_dir=cache_dir, progress=True, **limits)  # fmt: skip
    rows = []
    for record, result in zip(records, results, strict=True):
        d = result.to_dict()
        rows.append(dict(record, **{k: d[k] for k in RESULT_FIELDS}))
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    if out is not None:
        # /dev/null, a FIFO, /dev/stdout are written into; a file through OutDir (a link
        # planted at --out replaced, not followed); a device never renamed over
        from cppo_bench.files.outdir import write_user_file

        write_user_file(out, lines)
        console = Console()
    else:
        echo(lines, nl=False, lines=True, whole=True)  # JSON lines, read back whole
        console = err
    console.print(summary_table(rows, reference))
    if reference and any(not r["passed"] for r in rows):
        console.print(failure_table(rows))
    if errors:
        raise click.ClickException(f"{len(errors)} line(s) of {programs} could not be verified "
                                   "(see the errors above)")  # fmt: skip
