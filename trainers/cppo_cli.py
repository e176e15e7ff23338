"""`cppo-bench train cppo`: the five-stage CPPO pipeline (see README "Training CPPO").

Each stage writes DIR/<stage>/ (stage_manifest.json naming what it consumed, metrics.jsonl, its
artifacts and checkpoint); a complete stage is skipped on re-run, so the pipeline resumes. A
stage that refuses to go on (RM rejected, audit failed) exits non-zero naming what to revisit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cppo_bench.problem import DataError
from cppo_bench.registry import UnknownNameError


def make_judge(spec: str | None, base_url: str | None):
    """The offline default is the embedded model AND the deterministic rules (``combined``)."""
    from cppo_bench.backends import BACKENDS
    from trainers.cppo_pipeline.judge import JUDGES, parse_judge_spec

    kind, backend_name, model = parse_judge_spec(spec or "combined=hf:")
    backend = None
    if backend_name is not None:
        options = {"base_url": base_url} if base_url else {}
        backend = BACKENDS.get(backend_name)(model, **options)
    return JUDGES.get(kind)(backend)


@click.command("cppo")
@click.option(
    "--stages",
    default="sft,rm,warmup,audit,joint",
    show_default=True,
    help="Comma-separated stages to run (complete ones are skipped anyway).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML over trainers/configs/cppo.yaml (sections sft, rm, engine, ...).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VAL",
    help="Override a key, dotted for sections: --set m=4 --set rm.epochs=3.",
)
@click.option("--model", default=None, help="Base policy (default: embedded SmolLM2-135M).")
@click.option(
    "--judge",
    "judge_spec",
    default=None,
    metavar="[KIND=]BACKEND:MODEL|rules",
    help="Plan judge: rules, or a backend (openai:M, vllm:M, hf:M; default: "
    "combined=hf: the embedded model plus the rules).",
)
@click.option("--base-url", default=None, help="Server of an openai judge.")
@click.option("--rm-model", default=None, help="Base model of the generative reward model.")
@click.option(
    "--rm",
    "rm_kind",
    type=click.Choice(["generative", "ngram"]),
    default=None,
    help="Reward-model kind (default generative; ngram: the fast hashed classifier).",
)
@click.option("--bench", default="demo_train", show_default=True, help="Training set loader.")
@click.option("--data", default=None, help="Local copy for --bench.")
@click.option("--split", default=None)
@click.option(
    "--eval",
    "eval_specs",
    multiple=True,
    metavar="BENCH[=PATH]",
    help="Evaluation sets to decontaminate against (default: every one available).",
)
@click.option("--allow-overlap", is_flag=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Pipeline folder (default runs/train/cppo-MODEL).",
)
@click.option(
    "--preset",
    type=click.Choice(["auto", "study", "demo"]),
    default="auto",
    show_default=True,
    help="demo: small CPU settings; auto = demo without --model/--config.",
)
def cppo(
    stages: str,
    config_file: Path | None,
    sets: tuple[str, ...],
    model: str | None,
    judge_spec: str | None,
    base_url: str | None,
    rm_model: str | None,
    rm_kind: str | None,
    bench: str,
    data: str | None,
    split: str | None,
    eval_specs: tuple[str, ...],
    allow_overlap: bool,
    out: Path | None,
    preset: str,
) -> None:
    """Run the CPPO pipeline: planner SFT, reward model, warm-up, audit, joint CPPO."""
    from trainers.cli import _tag
    from trainers.cppo_pipeline.settings import load_settings
    from trainers.cppo_pipeline.stage_data import PipelineInputs
    from trainers.cppo_pipeline.stages import PipelineStop
    from trainers.engine import data as datamod

    if preset == "auto":
        preset = "demo" if model is None and config_file is None else "study"
    selected = [s.strip() for s in stages.split(",") if s.strip()]
    try:
        settings = load_settings(
            config_file, sets + ((f"rm.kind={rm_kind}",) if rm_kind else ()), preset == "demo"
        )
        from trainers.cppo_pipeline.pipeline import validate_settings

        validate_settings(settings)
        problems, source = datamod.load_training(bench, data, split)
        training = datamod.decontaminated(problems, source, list(eval_specs), allow_overlap)
        from trainers.cppo_pipeline.settings import select_problems

        pool = select_problems(training.problems, settings.get("problem_ids"))
        judge = make_judge(judge_spec, base_url)
    except (DataError, UnknownNameError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    out = out or Path("runs") / "train" / f"cppo-{_tag(model)}"
    inputs = PipelineInputs(
        pool,
        source,
        model,
        judge,
        settings,
        rm_model,
        training.removed,
        training.eval_sets,
    )
    from trainers.cppo_pipeline.pipeline import run_pipeline

    try:
        run_pipeline(out, inputs, selected, echo=lambda s: click.echo(s, err=True))
    except PipelineStop as stop:
        click.echo(f"cppo-bench train cppo: {stop}", err=True)
        if stop.revisit:
            click.echo(f"revisit stage: {stop.revisit}", err=True)
        sys.exit(3)
    except (DataError, UnknownNameError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    final = out / "joint" / "policy.json"
    if final.is_file():
        import json

        ckpt = json.loads(final.read_text())["policy"]
        click.echo(f"final checkpoint {ckpt}")
        click.echo(
            f"evaluate: cppo-bench run --method cppo --model {ckpt} --trained cppo "
            f"--base-model {model or 'smollm2-135m'} --train-seed 0 --bench demo"
        )
