"""`cppo-bench train ALGO`: train a policy with PKPO, pass@k-RL or UpSkill on the shared engine.

Registered in cppo_bench.cli.COMMANDS as a lazy string: the harness never imports trainers.
torch / transformers are imported only once a run starts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from cppo_bench.problem import DataError
from cppo_bench.registry import UnknownNameError

ALGOS = ("pkpo", "passk_rl", "upskill")


def _tag(model: str | None) -> str:
    if model is None:
        return "smollm2-135m"
    name = Path(model.rstrip("/")).name or model
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower() or "model"


def resolve_layers(algo: str, config_file: Path | None, sets: tuple[str, ...],
                   preset: str) -> list[dict]:
    from trainers.engine.config import CONFIG_DIR, parse_sets, read_yaml

    layers = [read_yaml(CONFIG_DIR / f"{algo}.yaml")]
    if preset == "demo":
        layers.append(read_yaml(CONFIG_DIR / "demo.yaml"))
        own = CONFIG_DIR / f"{algo}.demo.yaml"
        if own.is_file():
            layers.append(read_yaml(own))
    if config_file is not None:
        layers.append(read_yaml(config_file))
    layers.append(parse_sets(sets))
    return layers


@click.command("train")
@click.argument("algo", type=click.Choice(ALGOS), default="pkpo", required=False)
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML of config keys over the algorithm's study defaults.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VAL",
              help="Override one config key (repeatable), e.g. --set max_steps=10.")
@click.option("--model", default=None,
              help="Policy to train: HF folder, .gguf or hub id (default: embedded SmolLM2-135M).")
@click.option("--bench", default="demo_train", show_default=True,
              help="Training set loader (demo_train, codecontests, apps, ... or a JSONL path via --data).")
@click.option("--data", default=None, help="Local copy for --bench (its train split).")
@click.option("--split", default=None, help="Loader split (default: train where there is one).")
@click.option("--eval", "eval_specs", multiple=True, metavar="BENCH[=PATH]",
              help="Evaluation set to decontaminate against (repeatable; default: demo and "
              "every other benchmark available offline).")
@click.option("--allow-overlap", is_flag=True,
              help="Keep training problems that overlap an evaluation set (still listed).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Run folder (default: runs/train/ALGO-MODEL-seedS).")
@click.option("--resume", is_flag=True, help="Continue the run in --out from its last state.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--preset", type=click.Choice(["auto", "study", "demo"]), default="auto",
              show_default=True,
              help="demo: a few short CPU steps; auto = demo when neither --model nor --config.")
@click.option("--report-to", type=click.Choice(["none", "tensorboard"]), default=None,
              help="Also log to these accelerate trackers (tensorboard: optional extra).")
@click.option("--progress/--no-progress", default=True)
def train(algo: str, config_file: Path | None, sets: tuple[str, ...], model: str | None,
          bench: str, data: str | None, split: str | None, eval_specs: tuple[str, ...],
          allow_overlap: bool, out: Path | None, resume: bool, seed: int, preset: str,
          report_to: str | None, progress: bool) -> None:
    """Train ALGO (pkpo, passk_rl, upskill) with the study's settings; see README "Training"."""
    from trainers.engine.algorithm import ALGORITHMS
    from trainers.engine.config import build_configs

    if preset == "auto":
        preset = "demo" if model is None and config_file is None else "study"
    try:
        cls = ALGORITHMS.get(algo)
        layers = resolve_layers(algo, config_file, sets, preset)
        if report_to:
            layers.append({"report_to": report_to})
        engine_cfg, algo_cfg = build_configs(cls.Config, layers)
        from trainers.engine import data as datamod

        problems, source = datamod.load_training(bench, data, split)
        training = datamod.decontaminated(problems, source, list(eval_specs), allow_overlap)
    except (DataError, UnknownNameError) as exc:
        raise click.ClickException(str(exc)) from None
    out = out or Path("runs") / "train" / f"{algo}-{_tag(model)}-seed{seed}"
    if preset == "demo":
        click.echo(f"preset demo: {engine_cfg.max_steps} short steps (trainers/configs/demo.yaml)"
                   "; --preset study for the study's settings", err=True)
    if training.removed:
        verb = "kept (--allow-overlap)" if allow_overlap else "removed"
        click.echo(f"decontamination: {len(training.removed)} training problem(s) {verb}; "
                   "listed in the manifest", err=True)
    from trainers.engine.loop import RunSpec
    from trainers.engine.loop import train as run_training

    spec = RunSpec(algorithm=cls(algo_cfg), config=engine_cfg, training=training, out_dir=out,
                   model=model, seed=seed, resume=resume, progress=progress,
                   extra_manifest={"allow_overlap": allow_overlap, "preset": preset,
                                   "argv": sys.argv[1:]})
    try:
        result = run_training(spec)
    except DataError as exc:
        raise click.ClickException(str(exc)) from None
    if result.checkpoint is not None:
        click.echo(f"trained {result.steps} steps; checkpoint {result.checkpoint}")
        click.echo(f"evaluate: cppo-bench run --model {result.checkpoint} --trained {algo} "
                   f"--train-seed {seed} --bench demo")
