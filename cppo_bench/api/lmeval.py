"""`cppo-bench lm-eval`: lm-evaluation-harness with this toolkit's tasks on its path.
`LmEvalConfig` holds the command's one setting (lm-eval's own arguments); `lm_eval` runs
lm-eval on them in a child process and returns its exit status. lm-eval is imported only by
the child, so `include_path` (what `--path` prints) is instant."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cppo_bench.api.config import build_config, setting
from cppo_bench.errors import BackendError, DataError
from cppo_bench.lm_eval_tasks import include_path

__all__ = ["LmEvalConfig", "include_path", "lm_eval", "lm_eval_argv", "needs_default_model",
           "with_default_model"]  # fmt: skip

INCLUDE_FLAG = "--include_path"


@dataclass(frozen=True)
class LmEvalConfig:
    """Every setting of `cppo-bench lm-eval` (docs/options.md lists them)."""

    args: tuple[str, ...] = setting(
        (), "lm-eval's own arguments, passed on with this toolkit's task folder added."
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """A list of arguments as the tuple the field holds."""
        out = dict(values)
        if isinstance(out.get("args"), list):
            out["args"] = tuple(out["args"])
        return out


def lm_eval_argv(args: Sequence[str], path: str | None = None) -> list[str]:
    """The lm-eval command line for `args`, with our task folder added as --include_path.

    lm-eval's CLI takes a single include path, so an include path of the user's own is an
    error here rather than silently dropped (the Python TaskManager accepts a list)."""
    for arg in args:
        if arg == INCLUDE_FLAG or arg.startswith(INCLUDE_FLAG + "="):
            raise DataError(
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


def lm_eval(
    config: LmEvalConfig | Sequence[str],
    *,
    on_note: Callable[[str], None] | None = None,
) -> int:
    """Run lm-eval on `config.args` (or the arguments given) with the cppo_* tasks on its
    include path, in a child process, and return its exit status (130 when interrupted: the
    child got the same SIGINT and reports it itself). Without a model named, the embedded
    model is evaluated (`on_note` hears which folder)."""
    if not isinstance(config, LmEvalConfig):
        config = build_config(LmEvalConfig, {"args": list(config)})
    args = list(config.args)
    argv = lm_eval_argv(args)  # a second include path: refused before anything starts
    if importlib.util.find_spec("lm_eval") is None:
        raise BackendError("lm-eval is not installed: pip install 'cppo-bench[lmeval]'")
    if needs_default_model(args):
        from cppo_bench.api.model import default_model_path

        model_dir = str(default_model_path())
        if on_note is not None:
            on_note(f"lm-eval: no model named; evaluating the embedded model {model_dir}")
        argv = lm_eval_argv(with_default_model(args, model_dir))
    try:
        return subprocess.call(argv)
    except KeyboardInterrupt:
        return 130
