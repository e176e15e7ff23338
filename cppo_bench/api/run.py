"""`cppo-bench run`: generate K attempts per problem with a method, verify them, store a
resumable run per seed. `RunConfig` holds every setting; `run` takes it (or its fields as
keywords)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cppo_bench.api.config import build_config, required, setting
from cppo_bench.errors import BackendError, DataError, SettingError
from cppo_bench.problem import LoadResult
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd

    from cppo_bench.backends.base import Backend
    from cppo_bench.runner.pipeline import Reporter, RunResult


@dataclass(frozen=True)
class RunConfig:
    """Every setting of `cppo-bench run` / `cppo_bench.run` (docs/options.md lists them)."""

    method: str = required(
        "Method: direct, plan_and_solve, plansearch, cppo, ... (registered names)."
    )
    bench: str = required("Benchmark (see `cppo-bench data list`).")
    model: str | None = setting(None, "Model id or path (default: the backend's default).")
    backend: str = setting("hf", "hf, vllm, openai or mod:factory.")
    k: int = setting(4, "Attempts per problem: the pass@K budget.")
    seeds: tuple[int, ...] = setting((0,), "Comma-separated; one run each.")
    runs: str = setting("runs", "The run store the run is written to.")
    data: str | None = setting(None, "Local copy of the benchmark's data (default: its dataset).")
    limit: int | None = setting(
        None, "First N problems only; a larger N later extends the same run."
    )
    shard: tuple[int, ...] | None = setting(
        None, "Only shard I (0-based) of N of the problems, given as I/N."
    )
    temperature: float = setting(0.7, "0 = greedy; >= 0.")
    top_p: float = setting(0.95, "Nucleus sampling mass.")
    max_tokens: int = setting(2048, "Tokens per generation at most.")
    method_options: dict[str, Any] = setting({}, "Options of the method (KEY=VALUE).")
    backend_options: dict[str, Any] = setting({}, "Options of the backend (KEY=VALUE).")
    loader_options: dict[str, Any] = setting({}, "Options of the benchmark's loader (KEY=VALUE).")
    chunk_size: int = setting(16, "Problems per batch; a killed run loses at most one chunk.")
    workers: int | None = setting(None, "Verifier processes (default: the CPUs).")
    tags: dict[str, Any] = setting(
        {}, "Manifest tags (a trained checkpoint's trained, base_model, train_seed)."
    )
    lock_wait: float = setting(
        0.0, "Seconds to wait for a run another process holds (else stop at once, naming it)."
    )
    tests: str | None = setting(None, "An augmented test set folder (`cppo-bench augment`).")
    new_run: bool = setting(
        False,
        "Start this run even though an incomplete run of the same method, bench, model, K and "
        "seed with other settings is stored (without it, that stops with the field named).",
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """The text forms a user types (seeds "0,1,2", shard "3/8", a path) as the fields'
        types; `out` is the old name of `runs`."""
        from cppo_bench.store.runs import parse_shard

        out = dict(values)
        if "out" in out:
            if out.get("runs") is not None:
                raise SettingError("runs", "give runs or out (its old name), not both")
            out["runs"] = out.pop("out")
        if out.get("seeds") is not None:
            out["seeds"] = _seeds(out["seeds"])
        if isinstance(out.get("shard"), str):
            try:
                out["shard"] = parse_shard(out["shard"])
            except ValueError as exc:
                raise SettingError("shard", str(exc)) from None
        return out

    def __post_init__(self) -> None:
        if self.shard is not None and len(self.shard) != 2:
            raise ValueError(f"shard {quote(self.shard)}: give I/N, e.g. 0/8")


@dataclass(frozen=True)
class Run:
    """What `run` computed or resumed: one result per seed, in the order of `seeds`."""

    results: tuple[RunResult, ...]
    out: Path  # the run store's root

    @property
    def run_dirs(self) -> list[Path]:
        return [r.run_dir for r in self.results]

    @property
    def pass_at_k(self) -> dict[int, float | None]:
        """seed -> pass@K of the problems of this invocation (first-K rule)."""
        return {r.manifest.seed: r.summary["pass_at_k"] for r in self.results}

    def frame(self) -> pd.DataFrame:
        """The runs' per-problem rows (`load_runs` on each run directory)."""
        import pandas as pd

        from cppo_bench.stats.read import load_runs

        return pd.concat([load_runs(d) for d in self.run_dirs], ignore_index=True)


def _seeds(seeds: int | str | Sequence[int]) -> list[int]:
    if isinstance(seeds, int):
        return [seeds]
    if isinstance(seeds, str):
        try:
            seeds = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise SettingError(
                "seeds", f"{quote(seeds)} is not a comma-separated list of integers"
            ) from None
    out = list(seeds)  # each an integer: the builder checks (never 1.5 read as 1)
    if not out or len(set(out)) != len(out):
        raise SettingError("seeds", f"{quote(list(seeds))}: give distinct seeds, e.g. 0,1,2")
    return out


@contextmanager
def _given(backend: Backend) -> Iterator[Backend]:
    yield backend  # a backend object the caller made: the caller closes it


def _check_run_door(method: str, bench: str, model: str | None, backend: Any, k: int,
                    seeds: Sequence[int], out: str | Path, tags: Mapping[str, Any] | None,
                    **sampling: Any) -> None:  # fmt: skip
    """What `run` accepts is what every reader of the store accepts back: the options are
    checked with the run manifest's schema and ranges (cppo_bench.store.schema) before any data
    or model loads, and `out` must be a folder (or absent), so a run is never started that
    every reader would then call unreadable."""
    from cppo_bench.files import fs as storefs
    from cppo_bench.store import schema

    options = {"method": method, "bench": bench, "model": model, "k": k, **sampling}
    if isinstance(backend, str):
        options["backend"] = backend
    from cppo_bench.backends.base import check_sampling

    check_sampling(**sampling)  # SamplingError: the settings' own one range, named
    try:
        schema.check_options(options, schema.RUN_OPTIONS)
        for seed in seeds:
            why = schema.integer()(seed)
            if why:
                raise ValueError(f"seed {quote(seed)}: {why}")
        why = schema.SCHEMAS.get("run_manifest").fields["extra"](dict(tags or {}))
        if why:
            raise ValueError(why)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    storefs.check_root(Path(out))


def run(
    method: str | RunConfig,
    bench: str | None = None,
    *,
    backend: str | Backend | None = None,
    tests: str | Path | Any | None = None,
    session: Callable[[int], AbstractContextManager[Reporter | None]] | None = None,
    on_loaded: Callable[[LoadResult], None] | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    **settings: Any,
) -> Run:
    """Generate `k` attempts per problem of `bench` with `method`, verify them and store one
    resumable run per seed under `runs` (what `cppo-bench run` does; the same arguments
    resume or extend a run). Give a RunConfig, or its fields as keywords (``run("direct",
    "demo", k=4, seeds=[0], limit=1)``; `out` is the old name of `runs`). `backend` is a name
    (hf, vllm, openai, or ``package.module:factory``) or a Backend object of your own (closed
    by you); `model` defaults to the backend's default model (for hf: the embedded
    SmolLM2-135M-Instruct). `tags` go into the manifest (``{"trained": "pkpo", "base_model":
    ..., "train_seed": 0}`` for a trained checkpoint). `session(seed)` may give a context
    yielding a progress reporter (cppo_bench.runner.pipeline.Reporter); `on_loaded` and
    `on_result` hear about the data loaded and each seed's result, `on_note` gets lines worth
    saying (the tests a test set added). `tests`: an augmented test
    set (`cppo-bench augment` folder, or its TestSet) whose tests are added to every problem it
    covers; its hash is part of the run's identity. A stored incomplete run of the same method,
    bench, model, K and seed with another identity (other sampling, options, data) stops this
    one, naming the field, unless `new_run`."""
    given_backend = None if backend is None or isinstance(backend, str) else backend
    given_tests = None if tests is None or isinstance(tests, str | Path) else tests
    if isinstance(method, RunConfig):
        if bench is not None or settings:
            raise DataError("run: give a RunConfig or settings, not both")
        config = method
        if backend is not None and given_backend is None:
            raise DataError("run: with a RunConfig, the backend name is its `backend` field")
    else:
        values = {"method": method, "bench": bench, **settings}
        if given_backend is None:
            values["backend"] = backend
        if given_tests is None:
            values["tests"] = tests
        config = build_config(RunConfig, values)
    return _run(config, given_backend, given_tests, session, on_loaded, on_result, on_note)


def _run(
    config: RunConfig,
    backend_object: Backend | None,
    test_set: Any,
    session: Callable[[int], AbstractContextManager[Reporter | None]] | None,
    on_loaded: Callable[[LoadResult], None] | None,
    on_result: Callable[[RunResult], None] | None,
    on_note: Callable[[str], None] | None,
) -> Run:
    from cppo_bench.api.testsets import add_tests, read_tests
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.backends.opening import backend_factory, default_model_label, open_backend
    from cppo_bench.benchmarks import BENCHMARKS
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.methods import METHODS
    from cppo_bench.runner import rundata

    c = config
    METHODS.get(c.method)  # an unknown method before anything loads
    # an alias (plan-and-solve, livecodebench) is stored under its one name: same run
    method, bench = METHODS.canonical(c.method), BENCHMARKS.canonical(c.bench)
    # bad settings (a negative temperature) before anything loads
    sampling = SamplingParams(temperature=c.temperature, top_p=c.top_p, max_tokens=c.max_tokens)
    _check_run_door(method, bench, c.model, backend_object or c.backend, c.k, c.seeds, c.runs,
                    c.tags, temperature=c.temperature, top_p=c.top_p,
                    max_tokens=c.max_tokens)  # fmt: skip
    if backend_object is None:
        backend_factory(c.backend)  # an unknown or unimportable factory: before any loading
    test_set = read_tests(test_set if test_set is not None else c.tests, bench)
    # the whole dataset: it identifies the run; limit and shard select from it
    loaded = load_result(bench, c.data, **c.loader_options)
    if on_loaded is not None:
        on_loaded(loaded)
    loaded.problems, line = add_tests(loaded.problems, test_set)
    if line is not None and on_note is not None:
        on_note(line)
    if backend_object is None:
        name = c.backend
        label = c.model or default_model_label(name, backend_factory(name))
        opened = open_backend(name, c.model, dict(c.backend_options))
    else:
        name = str(getattr(backend_object, "name", type(backend_object).__name__))
        label = c.model or str(getattr(backend_object, "model_id", f"{name}-default"))
        opened = _given(backend_object)
    # what reloads the run from anywhere: the resolved path, its bytes' hash, every option
    data_record = rundata.record(c.data, dict(c.loader_options))
    try:
        return _each_seed(c, method, bench, label, name, sampling, loaded, opened, test_set,
                          data_record, session, on_result)  # fmt: skip
    except TypeError as exc:  # a backend factory refusing an option: the user's to fix
        if backend_object is not None or "argument" not in str(exc):
            raise
        raise BackendError(f"backend {quote(name)}: {exc}") from None


def _each_seed(c: RunConfig, method: str, bench: str, label: str, name: str, sampling: Any,
               loaded: LoadResult, opened: AbstractContextManager[Any], test_set: Any,
               data_record: dict[str, Any],
               session: Callable[[int], AbstractContextManager[Reporter | None]] | None,
               on_result: Callable[[RunResult], None] | None) -> Run:  # fmt: skip
    from cppo_bench.augment.store import identity
    from cppo_bench.runner.pipeline import EvalSpec, execute

    shard = None if c.shard is None else (c.shard[0], c.shard[1])
    results = []
    with opened as live:
        for seed in c.seeds:
            spec = EvalSpec(
                method=method,
                bench=bench,
                model=label,
                backend=name,
                k=c.k,
                seed=seed,
                sampling=sampling,
                method_options=dict(c.method_options),
                chunk_size=c.chunk_size,
                verify_workers=c.workers,
                tags={**c.tags, **identity(test_set), "data": data_record},
                limit=c.limit,
                shard=shard,
                new_run=c.new_run,
            )
            with session(seed) if session is not None else nullcontext() as reporter:
                result = execute(
                    spec,
                    loaded.problems,
                    live,
                    Path(c.runs),
                    data_source=data_record["path"] or loaded.source or bench,
                    reporter=reporter,
                    lock_wait=c.lock_wait,
                )
            if on_result is not None:
                on_result(result)
            results.append(result)
    return Run(tuple(results), Path(c.runs))
