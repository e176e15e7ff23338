"""`cppo-bench stats`: pass@K, significance, per-seed intervals, token efficiency and diversity,
from a run store (--runs) or a CSV of per-problem outcomes (--csv; schema in
cppo_bench/metrics/table.py), so results from anywhere can be re-tested. Each subcommand builds
its config (cppo_bench.api.stats) and prints what the one API call returns."""

from __future__ import annotations

import json
from typing import Any

import click

from cppo_bench.api.config import build_config
from cppo_bench.api.stats import BootstrapConfig, PassKConfig, SeedsConfig, TokensConfig
from cppo_bench.cli.options import configured
from cppo_bench.cli.stats_common import call, scoring_options, settings, source_options, table
from cppo_bench.util.termsafe import echo, safe

# the parameters named otherwise than their field, and those that only shape printing
NAMES = {"csv_path": "csv", "from_date": "start_date", "to_date": "end_date", "k_text": "k",
         "cands": "a", "bases": "b"}  # fmt: skip
VIEW = ("as_json",)


@click.group("stats")
def stats() -> None:
    """Metrics and significance tests on saved results.

    CSV input: columns method, problem_id, and outcomes (per-branch 0/1 string in rollout
    order, e.g. 0110) or passed (0/1); optional seed, benchmark, planner_tokens, solver_tokens.
    """


@configured(PassKConfig, names=NAMES, view=VIEW)
@stats.command("passk")
@source_options
@click.option("--k", "k_text")
@scoring_options
@click.option("--spread", type=click.Choice(["study", "seed-std", "bootstrap-se"]))
@click.option("--resamples", type=click.IntRange(min=1))
@click.option("--by", type=click.Choice(["difficulty", "platform", "month", "window"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def passk(as_json: bool, **opts: Any) -> None:
    """pass@K per benchmark and method: mean ± the study's uncertainty (trained: std over
    training seeds; inference-only: bootstrap SE over problems), with n and coverage."""
    from cppo_bench.api.stats import passk as passk_api

    config = build_config(PassKConfig, settings(opts, NAMES))
    table_ = call(passk_api, config)
    for line in table_.attrs["left_out"]:  # a default k the runs cannot give: named
        echo(line, err=True)
    for w in table_.attrs.get("warnings", []):
        echo(f"warning: {w}", err=True)
    if config.by is not None:
        _print_grouped(table_, config.by, table_.attrs["ks"], config.estimator, as_json)
        return
    _print_passk(table_, table_.attrs["ks"], config.estimator, as_json)


def _print_passk(result: Any, ks: list[int], estimator: str, as_json: bool) -> None:
    cells: dict[tuple[str, str], dict[int, Any]] = {}
    for c in result["cell"] if len(result) else []:
        cells.setdefault((c.benchmark, c.method), {})[c.k] = c
    if as_json:
        tests = result.attrs.get("tests", {})
        out = [{**c.to_dict(), "tests": tests.get(c.benchmark, [])}
               for _, per_k in sorted(cells.items()) for c in per_k.values()]  # fmt: skip
        echo(json.dumps(out, indent=1), lines=True, whole=True)
        return
    body, notes = [], []
    for (b, m), per_k in sorted(cells.items()):
        first = next(iter(per_k.values()))
        row = [b, m, str(len(first.seeds))]
        row += [str(per_k[k].value) if k in per_k else "-" for k in ks]
        row += [first.tally.text() or "-", first.estimator or "-"]
        body.append(row)
        if first.missing_text() and first.missing_text() not in notes:
            notes.append(first.missing_text())
    table(
        f"pass@K (estimator {estimator}: named per row)",
        ["benchmark", "method", "seeds"] + [f"pass@{k}" for k in ks] + ["plans", "estimator"],
        body,
    )
    for note in notes:
        echo(f"missing: {note}")
    for bench, texts in sorted(result.attrs.get("tests", {}).items()):
        for text in texts:  # what the scores rest on: public examples only is not a verdict
            echo(f"tests ({safe(bench)}): {safe(text)}")


def _print_grouped(result: Any, by: str, ks: list[int], estimator: str, as_json: bool) -> None:
    """`passk --by`: one row per benchmark, group and method."""
    cells: dict[tuple[str, str, str], dict[int, Any]] = {}
    marks: dict[tuple[str, str, str], str] = {}
    for _, row in result.iterrows() if len(result) else []:
        c = row["cell"]
        cells.setdefault((c.benchmark, row[by], c.method), {})[c.k] = c
        marks[(c.benchmark, row[by], c.method)] = row.get("run_partial") or ""
    if as_json:
        out = [{**c.to_dict(), by: g, "run_partial": marks[(b, g, m)]}
               for (b, g, m), per_k in cells.items() for c in per_k.values()]  # fmt: skip
        echo(json.dumps(out, indent=1), lines=True, whole=True)
        return
    body = []
    for (b, g, m), per_k in cells.items():  # groups in pass_at_k_by's order
        first = next(iter(per_k.values()))
        body.append([b, g, m, str(len(first.seeds))]
                    + [str(per_k[k].value) if k in per_k else "-" for k in ks]
                    + [marks[(b, g, m)] or "-"])  # fmt: skip
    table(f"pass@K ({estimator}) by {by}", ["benchmark", by, "method", "seeds"]
          + [f"pass@{k}" for k in ks] + ["coverage"], body)  # fmt: skip


@configured(BootstrapConfig, names=NAMES, view=VIEW)
@stats.command("bootstrap")
@source_options
@click.option("--a", "cands", multiple=True, required=True)
@click.option("--b", "bases", multiple=True)
@click.option("--k", type=click.IntRange(min=1))
@click.option("--resamples", type=click.IntRange(min=1))
@click.option("--alpha", type=click.FloatRange(0, 1))
@scoring_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def bootstrap(as_json: bool, **opts: Any) -> None:
    """Hierarchical bootstrap (problems and seeds resampled): one-sided p that A beats the
    strongest baseline, per benchmark (the study's dagger test)."""
    from cppo_bench.api.stats import bootstrap as bootstrap_api

    config = build_config(BootstrapConfig, settings(opts, NAMES))
    result = call(bootstrap_api, config)
    for line in [*result.attrs["left_out"], *result.attrs["skipped"]]:
        echo(line, err=True)
    k, out = result.attrs["k"], result.to_dict("records")
    if as_json:
        echo(json.dumps(out, indent=1), lines=True, whole=True)
        return
    body = [
        [r["benchmark"], r["method"], f"{r['score']:.3f}", r["baseline"], f"{r['baseline_score']:.3f}",
         f"{r['p_value']:.4f}", "†" if r["significant"] else "", _shared(r['problems'], r['dropped']),
         r["estimator"] if r["estimator"] == r["baseline_estimator"]
         else f"{r['estimator']} / {r['baseline_estimator']}"]
        for r in out
    ]  # fmt: skip
    cols = ["benchmark", "method", f"pass@{k}", "baseline", f"pass@{k}", "p (A>B)",
            f"p<{config.alpha}", "problems", "estimator"]  # fmt: skip
    table(f"hierarchical bootstrap, {config.resamples} resamples, seed {config.seed}", cols, body)


def _shared(problems: int, dropped: int) -> str:
    """'30 shared (2 not in every run)' instead of '30 (-2)'."""
    return f"{problems} shared ({dropped} not in every run)" if dropped else str(problems)


@configured(SeedsConfig, names=NAMES)
@stats.command("seeds")
@source_options
@click.option("--a", "a")
@click.option("--b", "b")
@click.option("--deltas")
@click.option("--k", type=click.IntRange(min=1))
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True))
@scoring_options
def seeds(**opts: Any) -> None:
    """Per-seed differences A - B of benchmark pass@K: mean and Student-t interval."""
    from cppo_bench.api.stats import seeds as seeds_api

    config = build_config(SeedsConfig, settings(opts, NAMES))
    result = call(seeds_api, config)
    for line in result.attrs["left_out"]:  # a larger k the runs cannot give: named
        echo(line, err=True)
    body = [[r["benchmark"], r["method"], ", ".join(f"{x:+.3f}" for x in r["deltas"]),
             str(r["ci"]), r["estimator"]] for r in result.to_dict("records")]  # fmt: skip
    table(
        f"per-seed differences of pass@{result.attrs['k'] or 'K'}, "
        f"{config.confidence:.0%} t interval",
        ["benchmark", "method", "deltas", "mean [CI]", "estimator"],
        body,
    )


@configured(TokensConfig, names=NAMES)
@stats.command("tokens")
@source_options
@click.option("--k", type=click.IntRange(min=1))
@scoring_options
def tokens(**opts: Any) -> None:
    """Decoded planner / solver tokens per problem and pass@K per 10k decoded tokens."""
    from cppo_bench.api.stats import tokens as tokens_api

    config = build_config(TokensConfig, settings(opts, NAMES))
    result = call(tokens_api, config)
    k = result.attrs["k"]
    for line in result.attrs["left_out"]:
        echo(line, err=True)

    def number(x: Any, digits: int) -> str:
        return "-" if x is None or x != x else f"{x:.{digits}f}"  # None, or NaN in a float column

    body = [[r["benchmark"], r["method"], number(r["planner"], 1), number(r["solver"], 1),
             number(r["tokens"], 1), f"{r['pass_at_k']:.3f}", number(r["per_10k"], 3),
             r["estimator"]] for r in result.to_dict("records")]  # fmt: skip
    cols = ["benchmark", "method", "planner", "solver", "tokens", f"pass@{k}", f"pass@{k}/10k",
            "estimator"]  # fmt: skip
    table("decoded tokens per problem (prompt tokens excluded)", cols, body)


# registered here, defined there (stats.py stays under the project's file size)
from cppo_bench.cli.stats_diversity import diversity  # noqa: E402

stats.add_command(diversity)
