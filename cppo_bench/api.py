"""The Python API: the functions behind `cppo-bench data`, `verify` and `run`, callable from a
script or a notebook. The CLI commands call these, so the two cannot drift. Re-exported from
`cppo_bench` (``from cppo_bench import load_benchmark, verify, run``); `load_runs` and
`stats` are in cppo_bench.stats (`load_runs`: cppo_bench.stats.read).

Every function raises one-line errors (DataError, OptionError, UnknownNameError: all
ValueError or KeyError) naming the input that is wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cppo_bench.benchmarks.load import load_result
from cppo_bench.errors import DataError
from cppo_bench.problem import LoadResult, Problem
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd

    from cppo_bench.backends.base import Backend
    from cppo_bench.runner.pipeline import Reporter, RunResult
    from cppo_bench.verifier.records import VerifyResult

Verdict = Any  # cppo_bench.verifier.VerifyResult (imported lazily: the verifier is not small)


def load_benchmark(
    name: str,
    data: str | Path | None = None,
    *,
    limit: int | None = None,
    strict: bool = False,
    **options: Any,
) -> list[Problem]:
    """The problems of benchmark `name` (see `cppo-bench data list`), from `data` (a local
    file or folder) or, without it, the benchmark's hub dataset (`demo` ships with the
    package). `options` are the loader options `-o KEY=VALUE` sets on the command line, e.g.
    ``difficulty="easy"``. Malformed records are skipped (``strict=True``: stop at the first);
    `load_result` also returns them."""
    return load_result(name, data, limit=limit, strict=strict, **options).problems


def verify(
    problems: Sequence[Problem],
    programs: Sequence[str],
    *,
    workers: int | None = None,
    all_tests: bool = False,
    cache_dir: str | Path | None = None,
    progress: bool = False,
    **limits: Any,
) -> list[VerifyResult]:
    """Verdicts of `programs[i]` on `problems[i]`'s tests, in the sandboxed verifier (a
    program may be a whole model completion: its last Python block is extracted).
    `limits` override the per-test defaults (cppo_bench.verifier.Limits: ``time_s``,
    ``memory_mb``, ``output_mb``, ...); a problem's own limits still take precedence.
    Each verdict has ``verdict`` (AC, WA, TLE, MLE, RE, CE, EMPTY), ``passed``,
    ``tests_passed``, ``tests_total``, ``detail`` and the resources used."""
    from cppo_bench.verifier import Limits, VerifyJob, verify_batch

    if isinstance(programs, str):
        raise DataError("programs: give a sequence of programs, one per problem, not one string")
    if len(problems) != len(programs):
        raise DataError(f"{len(problems)} problems but {len(programs)} programs: give one each")
    known = {f.name for f in dataclasses.fields(Limits)}
    unknown = sorted(set(limits) - known)
    if unknown:
        raise DataError(f"unknown limit(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    jobs = [VerifyJob(p, code) for p, code in zip(problems, programs, strict=True)]
    return verify_batch(
        jobs,
        workers=workers,
        all_tests=all_tests,
        cache_dir=None if cache_dir is None else Path(cache_dir),
        progress=progress,
        limits=Limits(**limits),
    )


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
            raise DataError(
                f"seeds {quote(seeds)}: not a comma-separated list of integers"
            ) from None
    out = [int(s) for s in seeds]
    if not out or len(set(out)) != len(out):
        raise DataError(f"seeds {quote(list(seeds))}: give distinct seeds, e.g. 0,1,2")
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
    method: str,
    bench: str,
    *,
    model: str | None = None,
    backend: str | Backend = "hf",
    k: int = 4,
    seeds: int | str | Sequence[int] = (0,),
    out: str | Path = "runs",
    data: str | Path | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    temperature: float = 0.7,
    top_p: float = 0.95,
    max_tokens: int = 2048,
    method_options: Mapping[str, Any] | None = None,
    backend_options: Mapping[str, Any] | None = None,
    loader_options: Mapping[str, Any] | None = None,
    chunk_size: int = 16,
    workers: int | None = None,
    tags: Mapping[str, Any] | None = None,
    lock_wait: float = 0.0,
    tests: str | Path | Any | None = None,
    new_run: bool = False,
    session: Callable[[int], AbstractContextManager[Reporter | None]] | None = None,
    on_loaded: Callable[[LoadResult], None] | None = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> Run:
    """Generate `k` attempts per problem of `bench` with `method`, verify them and store one
    resumable run per seed under `out` (what `cppo-bench run` does; the same arguments
    resume or extend a run). `backend` is a name (hf, vllm, openai, or
    ``package.module:factory``) or a Backend object of your own (closed by you); `model`
    defaults to the backend's default model (for hf: the embedded SmolLM2-135M-Instruct).
    `tags` go into the manifest (``{"trained": "pkpo", "base_model": ..., "train_seed": 0}``
    for a trained checkpoint). `session(seed)` may give a context yielding a progress
    reporter (cppo_bench.runner.pipeline.Reporter); `on_loaded` and `on_result` hear about the
    data loaded and each seed's result. `tests`: an augmented test set (`cppo-bench augment`
    folder, or its TestSet) whose tests are added to every problem it covers; its hash is part
    of the run's identity, so a run on augmented tests is a different run. A stored
    incomplete run of the same method, bench, model, K and seed with another identity
    (other sampling, options, data) stops this one, naming the field, unless `new_run`."""
    from cppo_bench.augment.store import identity, read_test_set, with_tests
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.backends.opening import backend_factory, default_model_label, open_backend
    from cppo_bench.benchmarks import BENCHMARKS
    from cppo_bench.methods import METHODS
    from cppo_bench.runner import rundata
    from cppo_bench.runner.pipeline import EvalSpec, execute

    METHODS.get(method)  # an unknown method before anything loads
    # an alias (plan-and-solve, livecodebench) is stored under its one name: same run
    method, bench = METHODS.canonical(method), BENCHMARKS.canonical(bench)
    # bad settings (a negative temperature) before anything loads
    sampling = SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens)
    seed_list = _seeds(seeds)
    _check_run_door(method, bench, model, backend, k, seed_list, out, tags,
                    temperature=temperature, top_p=top_p, max_tokens=max_tokens)  # fmt: skip
    test_set = read_test_set(Path(tests)) if isinstance(tests, str | Path) else tests
    if test_set is not None and test_set.bench != bench:
        raise DataError(f"test set {test_set.path}: made for {test_set.bench}, not {bench}")
    # the whole dataset: it identifies the run; limit and shard select from it
    loaded = load_result(bench, data, **dict(loader_options or {}))
    if on_loaded is not None:
        on_loaded(loaded)
    if test_set is not None:
        loaded.problems = with_tests(loaded.problems, test_set)
    if isinstance(backend, str):
        name = backend
        label = model or default_model_label(name, backend_factory(name))
        opened = open_backend(name, model, dict(backend_options or {}))
    else:
        name = str(getattr(backend, "name", type(backend).__name__))
        label = model or str(getattr(backend, "model_id", f"{name}-default"))
        opened = _given(backend)
    # what reloads the run from anywhere: the resolved path, its bytes' hash, every option
    data_record = rundata.record(data, dict(loader_options or {}))
    results = []
    with opened as live:
        for seed in seed_list:
            spec = EvalSpec(
                method=method,
                bench=bench,
                model=label,
                backend=name,
                k=k,
                seed=seed,
                sampling=sampling,
                method_options=dict(method_options or {}),
                chunk_size=chunk_size,
                verify_workers=workers,
                tags={**dict(tags or {}), **identity(test_set), "data": data_record},
                limit=limit,
                shard=shard,
                new_run=new_run,
            )
            with session(seed) if session is not None else nullcontext() as reporter:
                result = execute(
                    spec,
                    loaded.problems,
                    live,
                    Path(out),
                    data_source=data_record["path"] or loaded.source or bench,
                    reporter=reporter,
                    lock_wait=lock_wait,
                )
            if on_result is not None:
                on_result(result)
            results.append(result)
    return Run(tuple(results), Path(out))


def rejudge(run_dir: str | Path, **options: Any) -> Any:
    """Judge a stored run's completions again (today's verifier; ``tests``: an augmented test
    set) into a new run beside it, never changing the stored one; see cppo_bench.runner.rejudge."""
    import inspect

    from cppo_bench.runner.rejudge import rejudge as rejudge_run

    try:  # an option it does not take is one line, not Python's TypeError
        inspect.signature(rejudge_run).bind(run_dir, **options)
    except TypeError as exc:
        raise DataError(f"rejudge: {exc}") from None
    return rejudge_run(run_dir, **options)


def samples(
    run: str | Path, problem: str | None = None, *, data: str | Path | None = None, **options: Any
) -> list[dict[str, Any]]:
    """A run's samples per problem (statement, plans, programs, verdicts, first failing
    test), as `cppo-bench samples` shows them; see cppo_bench.runner.samples."""
    from cppo_bench.runner.samples import sample_rows

    return sample_rows(run, problem, data=data, loader_options=options or None)
