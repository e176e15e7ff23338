"""`cppo-bench samples`: what a model did per problem in a stored run (cppo_bench.runner.samples).
Every text shown came from a model or a dataset: it is printed through cppo_bench.util.termsafe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cppo_bench.api.samples import SamplesConfig
from cppo_bench.cli.options import configured, parse_kv


def _print(rows: list[dict[str, Any]], full: bool) -> None:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    from cppo_bench.util.termsafe import console as Console  # escapes data it prints
    from cppo_bench.util.termsafe import markup, safe

    def lines(text: str) -> str:  # multi-line outside text: escaped, its newlines kept
        return escape(safe(text, keep_newlines=True))

    console = Console()
    for row in rows:
        solved = "solved" if row["passed"] else "not solved"
        console.print(
            f"[bold]{markup(row['problem_id'])}[/bold]  {solved}  "
            f"({markup(row['bench'])}/{markup(row['method'])}, seed {row['seed']})",
            highlight=False,
        )
        if row["prompt"] is not None:
            prompt, title = row["prompt"], "prompt (problem statement)"
            if row["prompt_kind"] == "messages":
                prompt = _messages(prompt)
                title = "prompt (as sent)"
            text = prompt if full else prompt[:600]
            console.print(Panel(lines(text), title=title, expand=False))
        for stage in row.get("stages", []):  # what each planning stage sent and received
            if stage["prompt"] is not None:
                text = _messages(stage["prompt"])
                text = text if full else text[:600]
                console.print(Panel(lines(text), title=f"{stage['stage']} prompt (as sent)",
                                    expand=False))  # fmt: skip
            for j, got in enumerate(stage["received"]):
                text = got if full else got[:1200]
                console.print(Panel(lines(text), title=f"{stage['stage']} output {j} (raw)",
                                    expand=False))  # fmt: skip
        for i, plans in enumerate(row["plans"]):
            console.print(f"plans (tuple {i}, as parsed):", highlight=False)
            for plan in plans:
                console.print(f"  - {lines(plan)}", highlight=False)
        table = Table(show_lines=True)
        for col in ("#", "verdict", "tests", "plan", "program", "first failing test"):
            table.add_column(col, overflow="fold")
        for a in row["attempts"]:
            failing = a["first_failing_test"]
            if failing is not None:
                fail = f"#{failing['index']}\ninput: {failing['input']}\nexpected: {failing['expected']}"
            elif a["first_failed"] is not None:
                fail = f"#{a['first_failed']} (tests not at hand: give --data)"
            else:
                fail = "-"
            if a["detail"] and not a["passed"]:
                fail += f"\n{a['detail']}"
            code = a["code"] if full else "\n".join(a["code"].splitlines()[:25])
            plan = lines(a["plan"] or "-") + (
                " [bold](filled)[/bold]" if a.get("plan_filled") else ""
            )
            table.add_row(
                str(a["index"]),
                markup(a["verdict"]),
                f"{a['tests_passed']}/{a['tests_total']}",
                plan,
                lines(code or "(no program)"),
                lines(fail),
            )
        console.print(table)
        shown: set[str] = set()
        for a in row["attempts"]:  # each branch's solver prompt as sent (once if all share it)
            if a.get("solver_prompt") is None:
                continue
            text = _messages(a["solver_prompt"])
            if text in shown:
                continue
            shown.add(text)
            title = f"solver prompt of attempt {a['index']} (as sent)"
            console.print(Panel(lines(text if full else text[-800:]), title=title, expand=False))


def _messages(messages: list[dict[str, str]]) -> str:
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


@configured(SamplesConfig, names={"run_dir": "run", "data_path": "data"}, parsed={"option_pairs": "loader_options"},
            view=("full", "as_json"))  # fmt: skip
@click.command("samples")
@click.option(
    "--run", "run_dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("--problem")
@click.option("--data", "data_path", type=click.Path(exists=True))
@click.option("-o", "--option", "option_pairs", multiple=True, metavar="KEY=VALUE",
              help="Loader option for --data, as for `run`.")  # fmt: skip
@click.option("--failed", is_flag=True)
@click.option("--limit", type=click.IntRange(1))
@click.option("--full", is_flag=True, help="Whole programs and statements (default: clipped).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per problem (JSONL).")
def samples(**opts: Any) -> None:
    """Show a run's samples per problem: statement, plans, programs, verdicts and the first
    failing test (lm-eval's --log_samples, read back from the run store)."""
    from cppo_bench.api.config import build_config
    from cppo_bench.api.samples import samples as sample_rows
    from cppo_bench.util.termsafe import echo, json_line

    config = build_config(SamplesConfig, {
        "run": opts["run_dir"],
        "problem": opts["problem"],
        "data": opts["data_path"],
        "loader_options": parse_kv(opts["option_pairs"]),
        "failed": opts["failed"],
        "limit": opts["limit"],
    })  # fmt: skip
    rows = sample_rows(config)
    if opts["as_json"]:
        for row in rows:
            echo(json_line(row), whole=True)
        return
    if rows and not rows[0]["tests_at_hand"]:
        echo(
            "note: the benchmark's data is not at hand (give --data): statements and failing "
            "tests are not shown",
            err=True,
        )
    _print(rows, opts["full"])
