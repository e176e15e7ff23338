"""`cppo-bench lm-eval`: lm-evaluation-harness with this toolkit's tasks on its path
(cppo_bench.api.lmeval runs it).

    cppo-bench lm-eval --path                 print the folder to give lm-eval as --include_path
    cppo-bench lm-eval ARGS...                run `lm-eval ARGS... --include_path <that folder>`

lm-eval is imported only by the child process, so `--path` starts instantly.
"""

from __future__ import annotations

from typing import Any

import click

from cppo_bench.api.lmeval import LmEvalConfig
from cppo_bench.cli.options import configured
from cppo_bench.util.termsafe import echo


@configured(LmEvalConfig, view=("show_path",))
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
def lm_eval(**opts: Any) -> None:
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
    from cppo_bench.api.config import build_config
    from cppo_bench.api.lmeval import include_path
    from cppo_bench.api.lmeval import lm_eval as run_lm_eval

    config = build_config(LmEvalConfig, {"args": list(opts["args"])})
    if opts["show_path"]:
        if config.args:
            raise click.UsageError("--path takes no other arguments")
        echo(include_path())
        return
    if not config.args:
        echo(click.get_current_context().get_help(), lines=True)
        return
    code = run_lm_eval(config, on_note=lambda line: echo(line, err=True))
    click.get_current_context().exit(code)
