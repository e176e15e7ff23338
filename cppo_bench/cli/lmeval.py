"""`cppo-bench lm-eval`: lm-evaluation-harness with this toolkit's tasks on its path.

    cppo-bench lm-eval --path                 print the folder to give lm-eval as --include_path
    cppo-bench lm-eval ARGS...                run `lm-eval ARGS... --include_path <that folder>`

lm-eval is imported only by the child process, so `--path` starts instantly.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Sequence

import click

from cppo_bench.lm_eval_tasks import include_path
from cppo_bench.util.termsafe import echo

INCLUDE_FLAG = "--include_path"


def lm_eval_argv(args: Sequence[str], path: str | None = None) -> list[str]:
    """The lm-eval command line for `args`, with our task folder added as --include_path.

    lm-eval's CLI takes a single include path, so an include path of the user's own is an
    error here rather than silently dropped (the Python TaskManager accepts a list)."""
    for arg in args:
        if arg == INCLUDE_FLAG or arg.startswith(INCLUDE_FLAG + "="):
            raise click.ClickException(
                "cppo-bench lm-eval sets --include_path itself; to add task folders of your "
                "own, run lm-eval directly or use TaskManager(include_path=[...])"
            )
    return [sys.executable, "-m", "lm_eval", *args, INCLUDE_FLAG, path or include_path()]


def _value(args: Sequence[str], *flags: str) -> str | None:
    """The value of the last of `flags` in `args` (`--flag V` or `--flag=V`), else None."""
    found = None
    for i, arg in enumerate(args):
        for flag in flags:
            if arg == flag and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(flag + "="):
                found = arg.split("=", 1)[1]
    return found


def needs_default_model(args: Sequence[str]) -> bool:
    """Whether `args` is an evaluation that names no model weights: lm-eval would default
    to `--model hf` without `pretrained=` and fail deep inside; we give it the embedded model."""
    if not args or any(a in ("-h", "--help") for a in args):
        return False
    if args[0] != "run" and not args[0].startswith("-"):  # ls, validate: no model involved
        return False
    if _value(args, "--model_args", "-a") is not None:
        return False
    return _value(args, "--model", "-M") in (None, "hf", "vllm")


def with_default_model(args: Sequence[str], model_dir: str) -> list[str]:
    """`args` with the embedded model's Hugging Face folder as the model to evaluate."""
    extra = [] if _value(args, "--model", "-M") else ["--model", "hf"]
    return [*args, *extra, "--model_args", f"pretrained={model_dir}"]


@click.command(
    "lm-eval",
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        # stop parsing our options at lm-eval's first word, so `cppo-bench lm-eval run --help`
        # reaches lm-eval while `cppo-bench lm-eval --help` shows this help
        "allow_interspersed_args": False,
    },
)
@click.option("--path", "show_path", is_flag=True, help="Print the task folder and exit.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def lm_eval(show_path: bool, args: tuple[str, ...]) -> None:
    """Run lm-evaluation-harness with the cppo_* tasks (cppo_apps, cppo_codecontests,
    cppo_lcbv6, cppo_demo, group cppo) on its include path.

    \b
    Examples:
      cppo-bench lm-eval ls tasks
      cppo-bench lm-eval run --model hf --model_args pretrained=PATH --tasks cppo_demo \\
          --apply_chat_template --confirm_run_unsafe_code
      lm_eval --include_path "$(cppo-bench lm-eval --path)" --tasks cppo_demo ...

    Without --model / --model_args a run evaluates the embedded model (its folder:
    `cppo-bench model path`).

    Local data: CPPO_BENCH_DATA_APPS / _CODECONTESTS / _LCB / _DEMO=PATH, or
    --metadata apps_data=PATH; otherwise the tasks read the hub datasets.
    """
    if show_path:
        if args:
            raise click.UsageError("--path takes no other arguments")
        echo(include_path())
        return
    if not args:
        echo(click.get_current_context().get_help(), lines=True)
        return
    if importlib.util.find_spec("lm_eval") is None:
        raise click.ClickException("lm-eval is not installed: pip install 'cppo-bench[lmeval]'")
    if needs_default_model(args):
        from cppo_bench.backends.default_model import ensure_default_model

        model_dir = str(ensure_default_model())
        echo(f"lm-eval: no model named; evaluating the embedded model {model_dir}", err=True)
        args = tuple(with_default_model(args, model_dir))
    try:
        code = subprocess.call(lm_eval_argv(args))
    except KeyboardInterrupt:  # the child got the same SIGINT and reports it itself
        code = 130
    sys.exit(code)
