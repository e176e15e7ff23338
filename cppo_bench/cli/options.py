"""What the CLI commands share: the link from a command to the config object it builds
(`configured`), one KEY=VALUE parser, one --bench/--data/-o option set, one --runs."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from cppo_bench.util.keyvals import KeyValueError, parse_pairs
from cppo_bench.util.termsafe import quote

F = TypeVar("F", bound=Callable[..., Any])
Cmd = TypeVar("Cmd", bound=click.Command)


def parse_kv(
    pairs: tuple[str, ...], what: str = "-o/--option", dotted: bool = False
) -> dict[str, Any]:
    """`KEY=VALUE` pairs through the CLI's one parser (cppo_bench.util.keyvals): JSON where the
    value parses as JSON, text otherwise; a key given twice is an error."""
    try:
        return parse_pairs(pairs, dotted=dotted)
    except KeyValueError as exc:
        raise click.BadParameter(str(exc), param_hint=what) from None


# flag parameter -> the loader option it sets (LiveCodeBench's own flag names; the loader
# that has no such option refuses it in one line, as it does for -o)
LOADER_FLAGS = {"release": "release_version", "start_date": "start_date", "end_date": "end_date"}


def bench_options(func: F | None = None, *, required: bool = True) -> Any:
    """--bench NAME, --data PATH and repeatable -o KEY=VALUE loader options, as the
    parameters `bench`, `data_path` and `option_pairs`; --release / --start-date /
    --end-date are added to `option_pairs` (so every command taking -o takes them)."""
    import functools

    if func is None:  # @bench_options(required=False)
        return lambda f: bench_options(f, required=required)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        pairs = list(kwargs.get("option_pairs") or ())
        for flag, key in LOADER_FLAGS.items():
            value = kwargs.pop(flag, None)
            if value is not None:
                pairs.append(f"{key}={value}")
        kwargs["option_pairs"] = tuple(pairs)
        return func(*args, **kwargs)

    from cppo_bench.api.names import listing

    options = [
        click.option("--bench", required=required, help=f"Benchmark: {listing('benchmark')}."),
        click.option(
            "--data",
            "data_path",
            type=click.Path(exists=True),
            help="Local copy: JSONL / JSON / parquet / save_to_disk folder / APPS release "
            "folder. Default: the benchmark's Hugging Face dataset (the packaged file for demo).",
        ),
        click.option(
            "-o",
            "--option",
            "--loader-option",  # the name `run` used before; kept for existing scripts
            "option_pairs",
            multiple=True,
            metavar="KEY=VALUE",
            help="Loader option, repeatable (e.g. -o difficulty=all -o subset=0, "
            "-o release_version=release_v6 -o start_date=2025-02-01).",
        ),
        click.option(
            "--release",
            "--release_version",  # LiveCodeBench's spelling
            "release",
            default=None,
            help="lcb: release, e.g. release_v6 (increments 1..6), v6 (the 6th alone), v1_v3.",
        ),
        click.option(
            "--start-date",
            "--start_date",
            "start_date",
            default=None,
            help="lcb: only problems whose contest date is on or after YYYY-MM-DD.",
        ),
        click.option(
            "--end-date",
            "--end_date",
            "end_date",
            default=None,
            help="lcb: only problems whose contest date is on or before YYYY-MM-DD.",
        ),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def runs_option(
    *old: str, default: str | None = "runs", must_exist: bool = False, help: str
) -> Callable[[F], F]:
    """--runs PATH, the one name of a run store on every command (issue 48: it was --out,
    --into or --runs by command). ``old`` spellings still work, hidden from --help; giving
    both an old and the new spelling is an error rather than a silent choice."""
    path = click.Path(exists=must_exist, file_okay=False, path_type=Path)

    def from_old(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            if ctx.get_parameter_source("runs") is click.core.ParameterSource.COMMANDLINE:
                raise click.UsageError(f"give --runs or {param.opts[0]}, not both")
            ctx.meta[f"cppo_bench.runs_alias.{id(ctx)}"] = (param.opts[0], value)
        return value

    def new(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        given = ctx.meta.get(f"cppo_bench.runs_alias.{id(ctx)}")  # meta is shared by subcommands
        if given is None:
            return value
        if ctx.get_parameter_source("runs") is click.core.ParameterSource.COMMANDLINE:
            raise click.UsageError(f"give --runs or {given[0]}, not both")
        # given under its old name is given: --like and the other defaults must not override it
        ctx.set_parameter_source("runs", click.core.ParameterSource.COMMANDLINE)
        return given[1]

    def wrap(func: F) -> F:
        func = click.option("--runs", "runs", default=default, show_default=default is not None,
                            type=path, callback=new, help=help)(func)  # fmt: skip
        if old:
            func = click.option(*old, "_runs_old_spelling", type=path, default=None,
                                hidden=True, expose_value=False, callback=from_old)(func)  # fmt: skip
        return func

    return wrap


@dataclass(frozen=True)
class Configured:
    """What a command builds: its config class, the parameter -> field names that differ, the
    parameters the command parses into fields (KEY=VALUE lists, --like) and those that only
    shape what it prints (--quiet, --format)."""

    cls: type
    names: Mapping[str, str]
    parsed: Mapping[str, str]  # parameter -> the field it is parsed into ("" if several)
    view: frozenset[str]

    def field(self, param: str) -> str:
        return self.names.get(param, param)


ATTRIBUTE = "cppo_bench_config"
_UNSET = getattr(click.core, "UNSET", None)  # click >= 8.3: an option given no default


def configured(
    cls: type,
    *,
    names: Mapping[str, str] | None = None,
    parsed: Mapping[str, str] | Iterable[str] = (),
    view: Iterable[str] = (),
) -> Callable[[Cmd], Cmd]:
    """Put above ``@click.command()``: the command builds one ``cls`` (a config of
    cppo_bench.api) and calls the API with it. ``names``: parameter -> field where they
    differ; ``parsed``: parameter -> the field the command parses it into (KEY=VALUE lists,
    flags that build a dict); ``view``: parameters that only shape what is printed. Each option that sets a field takes its help
    and default from the field (said once, in the config), so --help, the API and
    docs/options.md cannot disagree; an option whose own default differs from the field's is
    refused here, at import (tests/cli/test_thin_cli.py imports every command)."""
    from cppo_bench.api.config import default_of, help_of

    into = dict(parsed) if isinstance(parsed, Mapping) else dict.fromkeys(parsed, "")

    def attach(cmd: Cmd) -> Cmd:
        folded = dict(into)
        if any(p.name == "option_pairs" for p in cmd.params):
            # bench_options folds its --release/--start-date/--end-date into the -o pairs
            folded |= {flag: folded.get("option_pairs", "") for flag in LOADER_FLAGS}
        link = Configured(cls, dict(names or {}), folded, frozenset(view))
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for param in cmd.params:
            field = fields.get(link.field(param.name or ""))
            if field is None or param.name in link.parsed or not isinstance(param, click.Option):
                continue
            if not param.help:
                param.help = help_of(field)
            default = default_of(field)
            if default is dataclasses.MISSING or param.multiple or param.is_flag:
                continue
            if not isinstance(default, bool | int | float | str | type(None)):
                continue  # a list or mapping is given in its text form, parsed by the config
            unset = param.default is None or param.default is _UNSET
            if unset and default is not None:
                param.default, param.show_default = default, True
            elif not unset and param.default != default:
                raise TypeError(
                    f"{cmd.name} {param.opts[0]}: default {quote(param.default)} is not "
                    f"{cls.__name__}.{field.name}'s {quote(default)}: give it in the config only"
                )
        setattr(cmd, ATTRIBUTE, link)
        callback = cmd.callback
        if callback is not None:

            @functools.wraps(callback)
            def running(*args: Any, **kwargs: Any) -> Any:
                ctx = click.get_current_context(silent=True)
                if ctx is not None:  # for the one catch site: which flag a setting is
                    ctx.meta[RUNNING] = cmd
                return callback(*args, **kwargs)

            cmd.callback = running
        return cmd

    return attach


RUNNING = "cppo_bench.running_command"


def flag_of(ctx: click.Context, setting: str) -> str | None:
    """The flag that sets config field `setting` of the command running in `ctx` (its long
    spelling), for an error line that names what the user typed; None when no flag does."""
    cmd = ctx.meta.get(RUNNING)
    link = None if cmd is None else config_of(cmd)
    if cmd is None or link is None:
        return None
    for param in cmd.params:
        if isinstance(param, click.Option) and link.field(param.name or "") == setting:
            return next((o for o in param.opts if o.startswith("--")), param.opts[0])
    return None


def config_of(cmd: click.Command) -> Configured | None:
    """The config a command builds (``configured``), or None."""
    found = getattr(cmd, ATTRIBUTE, None)
    return found if isinstance(found, Configured) else None
