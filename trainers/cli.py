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

from trainers.harness import DataError, build_config, configured, echo, nest, parse_kv
from trainers.request import TrainRequest

ALGOS = ("cppo", "pkpo", "passk_rl", "upskill")
# cppo's own options: parameter name -> the flag a user typed
CPPO_ONLY = {"stages": "--stages", "judge_spec": "--judge", "base_url": "--base-url",
             "rm_model": "--rm-model", "rm_kind": "--rm"}  # fmt: skip


# parameter -> the TrainRequest field it is parsed into
_PARSED = {
    **dict.fromkeys(("sets", "report_to", "rm_kind", "reward_tests", "tests_dir"), "overrides"),
    **dict.fromkeys(("base_url", "rm_model", "judge_spec"), "options"),
    "progress": "quiet",
    "stages": "stages",  # "sft,rm", read by TrainRequest.normalize
}


@configured(TrainRequest, names={"config_file": "config"}, parsed=_PARSED,
            view=("print_config", "dry_run"))  # fmt: skip
@click.command("train")
@click.argument("algo", type=click.Choice(ALGOS), default="pkpo", required=False)
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False))
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
@click.option("--gpu-memory", metavar="SIZE")
@click.option("--model")
@click.option("--bench")
@click.option("--data")
@click.option("--split")
@click.option(
    "--eval",
    "eval_specs",
    multiple=True,
    metavar="BENCH[=PATH]",
    help="Evaluation set to decontaminate against (repeatable; default: demo and "
    "every other benchmark available offline).",
)
@click.option("--allow-overlap", is_flag=True)
@click.option("--out", type=click.Path(path_type=Path, file_okay=False))
@click.option("--resume", is_flag=True)
@click.option("--seed", type=int)
@click.option("--preset", type=click.Choice(["auto", "study", "demo"]))
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
@click.option("--quiet", is_flag=True)
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
    from trainers.api import resolved
    from trainers.api import train as api_train
    from trainers.cppo_pipeline.stages import PipelineStop

    given = [name for name in CPPO_ONLY if opts[name] is not None]
    if algo != "cppo" and given:
        raise click.UsageError(f"{CPPO_ONLY[given[0]]} is for cppo only")
    request = build_config(TrainRequest, {
        **{name: opts[name] for name in _AS_IS},
        "algo": algo,
        "config": opts["config_file"],
        "eval_specs": list(opts["eval_specs"]),
        "quiet": bool(opts["quiet"]) or not opts["progress"],
        "options": {k: opts[k] for k in ("base_url", "rm_model") if opts[k]}
        | ({"judge": opts["judge_spec"]} if opts["judge_spec"] else {}),
        "overrides": _overrides(algo, opts),
    })  # fmt: skip
    if opts["print_config"]:  # what a run (or a plain --resume of --out) would use
        config = resolved(request)
        printed = {"algo": algo, "preset": config.preset, "config": config.as_dict()}
        echo(json.dumps(printed, indent=2), lines=True)
        return
    plan_ok = _preflight(request, bool(opts["dry_run"]))
    if opts["dry_run"]:
        sys.exit(0 if plan_ok else 2)
    try:
        outcome = api_train(
            request, echo=lambda line: echo(line, err=True), manifest={"argv": sys.argv[1:]}
        )
    except PipelineStop as stop:
        echo(f"cppo-bench train cppo: {stop}", err=True)
        if stop.revisit:
            echo(f"revisit stage: {stop.revisit}", err=True)
        sys.exit(3)
    if outcome.checkpoint is not None:
        trained = resolved(request).as_dict()
        echo(f"trained {outcome.steps} steps; checkpoint {outcome.checkpoint}")
        echo(
            f"evaluate: cppo-bench run --method {outcome.eval_method} "
            f"{shlex.join(_evaluate_with(request.bench, trained))} "
            f"--model {shlex.quote(str(outcome.checkpoint))} --trained {algo} "
            f"--base-model {shlex.quote(outcome.base_model)} --train-seed {request.seed}"
        )


# the parameters that are TrainRequest fields under their own name
_AS_IS = ("preset", "model", "bench", "data", "split", "allow_overlap", "out", "resume", "seed",
          "stages", "gpu_memory")  # fmt: skip


def _overrides(algo: str, opts: dict[str, Any]) -> dict[str, Any]:
    """The config keys the command line sets: --set, and the flags that are config keys."""
    overrides = nest(parse_kv(tuple(opts["sets"]), "--set", dotted=True))
    if opts["report_to"]:
        key = {"report_to": opts["report_to"]}
        overrides = {**overrides, **({"engine": key} if algo == "cppo" else key)}
    if opts["rm_kind"]:
        overrides.setdefault("rm", {})["kind"] = opts["rm_kind"]
    return _reward_tests(algo, opts, overrides)


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


def _preflight(request: TrainRequest, dry_run: bool) -> bool:
    """trainers.preflight before any stage: with --dry-run the plan is printed; problems are
    one line each (a real run stops at the first, exit 1; a dry run lists all, returns False)."""
    from trainers.api import check

    plan, card = check(request)
    if dry_run:
        echo("\n".join(plan.lines(card)), lines=True)
        for problem in plan.problems:
            echo(f"refused: {problem}", err=True)
        return not plan.problems
    if plan.problems:
        raise DataError(plan.problems[0])
    return True
