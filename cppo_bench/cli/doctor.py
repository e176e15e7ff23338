"""`cppo-bench doctor`: what this machine can do and what is missing (the checks are
cppo_bench/api/doctor.py's; this module prints them)."""

from __future__ import annotations

import json

import click

from cppo_bench.util.termsafe import echo

MARKS = {"ok": "ok", "weak": "WEAK", "missing": "MISSING", "info": "-"}


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of the table.")
def doctor(as_json: bool) -> None:
    """Say what this machine can do (verifier sandbox, models, encoders, vLLM, GPUs, lm-eval)
    and print the exact install line for each missing piece. Always exits 0: it reports."""
    from cppo_bench.api.doctor import doctor as diagnose

    found = diagnose()
    if as_json:
        echo(json.dumps(found.to_dict(), indent=1), lines=True, whole=True)
        return
    width = max(len(c.name) for c in found.checks)
    for c in found.checks:
        echo(f"{MARKS.get(c.status, c.status):<7} {c.name:<{width}}  {c.detail}")
        if c.fix:
            echo(f"{'':<7} {'':<{width}}  fix: {c.fix}")
    counts = found.counts
    echo(
        f"{counts['ok']} ok, {counts['weak']} weak, {counts['missing']} missing"
        + (f", {counts['info']} for information" if counts["info"] else "")
    )
