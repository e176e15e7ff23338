"""`cppo-bench train ALGO`: the one training command (cppo, pkpo, passk_rl, upskill).

Plugged into `cppo-bench` by an entry point (pyproject.toml, group "cppo_bench.commands"):
the harness never names the trainers.
Every option maps onto ``trainers.api.train``; torch / transformers load only once a run starts.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from trainers.harness import DataError, UserError, echo

ALGOS = ("cppo", "pkpo", "passk_rl", "upskill")
# cppo's own options: parameter name -> the flag a user typed
CPPO_ONLY = {"stages": "--stages", "judge_spec": "--judge", "base_url": "--base-url",
             "rm_model": "--rm-model", "rm_kind": "--rm"}  # fmt: skip


@click.command("train")
@click.argument("algo", type=click.Choice(ALGOS), default="pkpo", required=False)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML preset of config keys over the study's defaults (sections for cppo).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VAL",
    help="Override one config key (repeatable; dotted for cppo sections: --set rm.epochs=3). "
    "VAL is JSON where it parses as JSON, text otherwise; a key given twice is an error.",
)
@click.option("--print-config", is_flag=True, help="Print the resolved config and exit.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the stages, their layouts and per-GPU memory estimates, and exit (no weights "
    "are loaded); 2 when the preflight refuses the run.",
)
@click.option(
    "--gpu-memory",
    default=None,
    metavar="SIZE",
    help="The card's memory for the estimates (80GiB, 141GB); default: the first CUDA "
    "device's, none on a CPU (memory then not compared).",
)
@click.option(
    "--model",
    default=None,
    help="Policy to train: HF folder, .gguf or hub id (default: embedded SmolLM2-135M).",
)
@click.option(
    "--bench",
    default="demo_train",
    show_default=True,
    help="Training set loader (demo_train, codecontests, apps, ... or a JSONL path via --data).",
)
@click.option("--data", default=None, help="Local copy for --bench (its train split).")
@click.option("--split", default=None, help="Loader split (default: train where there is one).")
@click.option(
    "--eval",
    "eval_specs",
    multiple=True,
    metavar="BENCH[=PATH]",
    help="Evaluation set to decontaminate against (repeatable; default: demo and "
    "every other benchmark available offline).",
)
@click.option(
    "--allow-overlap",
    is_flag=True,
    help="Keep training problems that overlap an evaluation set (still listed).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Run folder (default: runs/train/ALGO-MODEL-seedS).",
)
@click.option("--resume", is_flag=True, help="Continue the run in --out from its last state.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--preset",
    type=click.Choice(["auto", "study", "demo"]),
    default="auto",
    show_default=True,
    help="demo: a few short CPU steps; auto = demo when neither --model nor --config.",
)
@click.option(
    "--report-to",
    type=click.Choice(["none", "tensorboard", "wandb"]),
    default=None,
    help="Also log to this accelerate tracker (tensorboard: optional extra; wandb: offline "
    "when WANDB_MODE=offline or no API key).",
)
@click.option(
    "--tests",
    "tests_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="An augmented test set (`cppo-bench augment --out DIR`) for --reward-tests augmented.",
)
@click.option(
    "--reward-tests",
    type=click.Choice(["original", "augmented"]),
    default=None,
    help="Which tests the training reward judges with: the dataset's own (default) or also "
    "the augmented set given with --tests (a policy then cannot learn the weak tests).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--progress/--no-progress", "progress", default=True, hidden=True)
@click.option(
    "--stages",
    default=None,
    help="cppo: comma-separated stages to run (sft,rm,warmup,audit,joint; complete ones "
    "are skipped anyway).",
)
@click.option(
    "--judge",
    "judge_spec",
    default=None,
    metavar="[KIND=]BACKEND:MODEL|rules",
    help="cppo: plan judge: rules, or a backend (openai:M, vllm:M, hf:M; default: "
    "combined=hf: the embedded model plus the rules).",
)
@click.option("--base-url", default=None, help="cppo: server of an openai judge.")
@click.option("--rm-model", default=None, help="cppo: base model of the generative RM.")
@click.option(
    "--rm",
    "rm_kind",
    type=click.Choice(["generative", "ngram"]),
    default=None,
    help="cppo: reward-model kind (default generative; ngram: the fast hashed classifier).",
)
def train(algo: str, **opts: Any) -> None:  # (click's values: typed by its options)
    """Train ALGO (cppo, pkpo, passk_rl, upskill) with the study's settings; see docs."""
    from trainers.api import resolve
    from trainers.api import train as api_train
    from trainers.cppo_pipeline.pipeline import parse_stages
    from trainers.cppo_pipeline.stages import PipelineStop
    from trainers.harness import nest, parse_kv

    given = [name for name in CPPO_ONLY if opts[name] is not None]
    if algo != "cppo" and given:
        raise click.UsageError(f"{CPPO_ONLY[given[0]]} is for cppo only")
    quiet = bool(opts["quiet"]) or not opts["progress"]
    try:
        overrides = nest(parse_kv(tuple(opts["sets"]), "--set", dotted=True))
        if opts["report_to"]:
            key = (
                {"engine": {"report_to": opts["report_to"]}}
                if algo == "cppo"
                else {"report_to": opts["report_to"]}
            )
            overrides = {**overrides, **key}
        if opts["rm_kind"]:
            overrides.setdefault("rm", {})["kind"] = opts["rm_kind"]
        overrides = _reward_tests(algo, opts, overrides)
        stages = parse_stages(str(opts["stages"])) if opts["stages"] else []
        if opts["print_config"]:  # what a run (or a plain --resume of --out) would use
            from trainers.api import default_out, recorded_config

            folder = opts["out"] or default_out(algo, opts["model"], int(opts["seed"]))
            resolved = resolve(
                algo,
                config=opts["config_file"],
                preset=str(opts["preset"]),
                model=opts["model"],
                overrides=overrides,
                base=recorded_config(algo, Path(folder)) if opts["resume"] else None,
                bench=str(opts["bench"]),
            )
            echo(
                json.dumps(
                    {"algo": algo, "preset": resolved.preset, "config": resolved.as_dict()},
                    indent=2,
                ),
                lines=True,
            )
            return
        plan_ok = _preflight(algo, opts, overrides, stages)
        if opts["dry_run"]:
            sys.exit(0 if plan_ok else 2)
        outcome = api_train(
            algo,
            config=opts["config_file"],
            preset=str(opts["preset"]),
            model=opts["model"],
            bench=str(opts["bench"]),
            data=opts["data"],
            split=opts["split"],
            eval_specs=tuple(opts["eval_specs"]),
            allow_overlap=bool(opts["allow_overlap"]),
            out=opts["out"],
            resume=bool(opts["resume"]),
            seed=int(opts["seed"]),
            stages=stages,
            quiet=quiet,
            options={k: opts[k] for k in ("base_url", "rm_model") if opts[k]}
            | ({"judge": opts["judge_spec"]} if opts["judge_spec"] else {}),
            echo=lambda line: echo(line, err=True),
            manifest={"argv": sys.argv[1:]},
            **overrides,
        )
    except PipelineStop as stop:
        echo(f"cppo-bench train cppo: {stop}", err=True)
        if stop.revisit:
            echo(f"revisit stage: {stop.revisit}", err=True)
        sys.exit(3)
    except ValueError as exc:  # a UserError goes on to the CLI's one catch site as it is
        if isinstance(exc, UserError):
            raise
        raise DataError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if outcome.checkpoint is not None:
        trained = resolve(
            algo,
            config=opts["config_file"],
            preset=str(opts["preset"]),
            model=opts["model"],
            overrides=overrides,
            bench=str(opts["bench"]),
        ).as_dict()
        echo(f"trained {outcome.steps} steps; checkpoint {outcome.checkpoint}")
        echo(
            f"evaluate: cppo-bench run --method {outcome.eval_method} "
            f"{shlex.join(_evaluate_with(str(opts['bench']), trained))} "
            f"--model {shlex.quote(str(outcome.checkpoint))} --trained {algo} "
            f"--base-model {shlex.quote(outcome.base_model)} --train-seed {opts['seed']}"
        )


def _evaluate_with(bench: str, trained: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The held-out problems of the training benchmark (its spec says; a training file or a
    benchmark that says nothing: the same benchmark), sampled as the policy was trained:
    ``trained`` (the resolved config; cppo's engine keys in its ``engine`` section) sets the
    hint's --max-tokens (a CPPO planner writes a 9-token tuple where the strategies spec says
    1) and the prompt version (a planner trained on v2-short read v2 at evaluation)."""
    from trainers.harness import BENCHMARKS

    spec = BENCHMARKS.get(bench) if bench in BENCHMARKS else None
    hint = list((spec.evaluate_with if spec else None) or ("--bench", bench))
    engine = (trained or {}).get("engine", trained or {})
    if "--max-tokens" in hint and engine.get("max_tokens"):
        hint[hint.index("--max-tokens") + 1] = str(engine["max_tokens"])
    if engine.get("prompt_version"):
        hint += ["-m", f"prompt_version={engine['prompt_version']}"]
    return tuple(hint)


def _reward_tests(algo: str, opts: dict, overrides: dict) -> dict:
    """--reward-tests augmented --tests DIR as the config key reward_tests (an engine key; for
    cppo in its engine section)."""
    choice, folder = opts["reward_tests"], opts["tests_dir"]
    if choice == "augmented" and folder is None:
        raise click.UsageError("--reward-tests augmented needs --tests DIR (an augmented set)")
    if folder is not None and choice != "augmented":
        raise click.UsageError("--tests is read by the reward only with --reward-tests augmented")
    if choice != "augmented":
        return overrides
    if algo == "cppo":
        return {**overrides, "engine": {**overrides.get("engine", {}), "reward_tests": str(folder)}}
    return {**overrides, "reward_tests": str(folder)}


def _preflight(algo: str, opts: dict, overrides: dict, stages: list[str]) -> bool:
    """trainers.preflight before any stage: with --dry-run the plan is printed; problems are
    one line each (a real run stops at the first, exit 1; a dry run lists all, returns False)."""
    from trainers.api import default_out, recorded_config, resolve
    from trainers.preflight import preflight

    out = opts["out"] or default_out(algo, opts["model"], int(opts["seed"]))
    resolved = resolve(  # the config the run will use, as --print-config resolves it
        algo, config=opts["config_file"], preset=str(opts["preset"]), model=opts["model"],
        overrides=overrides, bench=str(opts["bench"]),
        base=recorded_config(algo, Path(out)) if opts["resume"] else None,
    )  # fmt: skip
    options = {k: opts[k] for k in ("rm_model",) if opts[k]}
    options |= {"judge": opts["judge_spec"]} if opts["judge_spec"] else {}
    plan, card = preflight(
        algo, resolved.config, opts["model"], options, out, opts["gpu_memory"], stages
    )
    if opts["dry_run"]:
        echo("\n".join(plan.lines(card)), lines=True)
        for problem in plan.problems:
            echo(f"refused: {problem}", err=True)
        return not plan.problems
    if plan.problems:
        raise click.ClickException(plan.problems[0])
    return True
