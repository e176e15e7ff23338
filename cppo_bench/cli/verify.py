"""`cppo-bench verify`: run programs (or the problems' reference solutions) through the
sandboxed verifier and summarise the verdicts (cppo_bench.api.verify does the work)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from cppo_bench.api.verify import Verified, VerifyConfig
from cppo_bench.cli.options import bench_options, configured, parse_kv, runs_option
from cppo_bench.cli.testsets import tests_option
from cppo_bench.util.termsafe import echo, markup, safe


def summary_table(verified: Verified) -> Any:
    from rich.table import Table

    n = len(verified.rows)
    title = "reference solutions" if verified.reference else "programs"
    table = Table(title=f"cppo-bench verify: {n} {title}")
    table.add_column("verdict")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    accepted = 0
    for verdict, count, share in verified.tally():
        table.add_row(verdict, str(count), f"{share:.1%}")
        accepted += count if verdict == "AC" else 0
    solved, problems = verified.solved()
    table.add_section()
    table.add_row("pass rate", f"{accepted}/{n}", f"{accepted / max(n, 1):.1%}")
    table.add_row("problems solved", f"{solved}/{problems}", f"{solved / max(problems, 1):.1%}")
    return table


def failure_table(failed: list[dict[str, Any]], limit: int = 25) -> Any:
    from rich.table import Table

    table = Table(title=f"failing reference solutions ({len(failed)})")
    for col in ("problem", "ref", "verdict", "detail"):
        table.add_column(col, overflow="fold")
    for r in failed[:limit]:
        table.add_row(markup(r["problem_id"]), str(r.get("reference_index", "")),
                      markup(r["verdict"]), markup(str(r["detail"])[:120]))  # fmt: skip
    if len(failed) > limit:
        table.add_row("...", "", "", f"{len(failed) - limit} more in the output file")
    return table


def print_rejudged(source: str, done: Any) -> None:
    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    echo(f"re-judged {safe(source)} into {safe(done.run_dir)} (the source is unchanged)")
    echo(
        f"pass@{done.manifest.k}: {fmt(done.before)} -> {fmt(done.after)} over "
        f"{len(done.records)} problems; {done.changed} attempts changed pass/fail"
    )


@configured(VerifyConfig, names={"data_path": "data", "tests_dir": "tests", "run_dir": "run"},
            parsed={"option_pairs": "loader_options"}, view=("out",))  # fmt: skip
@click.command("verify")
@bench_options(required=False)
@tests_option
@click.option("--run", "run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@runs_option("--into", default=None, help="")  # --into: the old spelling; help: the config
@click.option("--programs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write one result line per program here (default: standard output).",
)
@click.option("--workers", type=click.IntRange(min=1))
@click.option("--all-tests", is_flag=True)
@click.option("--reference", is_flag=True)
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True))
@click.option("--memory-mb", type=click.IntRange(min=16))
@click.option("--output-mb", type=click.IntRange(min=1))
@click.option("--unsafe-no-sandbox", is_flag=True)
def verify(**opts: Any) -> None:
    """Verify programs against a benchmark's hidden tests in the sandbox, or (--run) judge a
    stored run again into a new run."""
    from cppo_bench.api.config import build_config
    from cppo_bench.api.verify import rejudge_run, verify_programs
    from cppo_bench.errors import DataError
    from cppo_bench.util.termsafe import console as Console  # escapes data it prints

    settings = {f: opts[f] for f in VerifyConfig.__dataclass_fields__ if f in opts}
    config = build_config(VerifyConfig, {
        **settings,
        "data": opts["data_path"],
        "tests": opts["tests_dir"],
        "run": opts["run_dir"],
        "loader_options": parse_kv(opts["option_pairs"]),
    })  # fmt: skip
    note = lambda line: echo(line, err=True)  # noqa: E731
    if config.run is not None:
        print_rejudged(config.run, rejudge_run(config, on_note=note, progress=True))
        return
    verified = verify_programs(config, on_note=note, progress=True)
    lines = "".join(json.dumps(row) + "\n" for row in verified.rows)
    out, err = opts["out"], Console(stderr=True)
    if out is not None:
        from cppo_bench.api.output import write_user_file

        write_user_file(out, lines)
        console = Console()
    else:
        echo(lines, nl=False, lines=True, whole=True)  # JSON lines, read back whole
        console = err
    console.print(summary_table(verified))
    if verified.reference and verified.failed():
        console.print(failure_table(verified.failed()))
    if verified.errors:
        raise DataError(f"{len(verified.errors)} line(s) of {config.programs} could not be "
                        "verified (see the errors above)")  # fmt: skip
