"""`cppo-bench verify`: programs against a benchmark's hidden tests, in the sandboxed verifier;
and judging a stored run again. `VerifyConfig` holds every setting of the command;
`verify_programs` and `rejudge_run` take it (or its fields as keywords); `verify` and `rejudge`
are the Python forms over problems and programs in memory, and a run directory."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cppo_bench.api.config import build_config, setting
from cppo_bench.errors import DataError
from cppo_bench.problem import Problem

if TYPE_CHECKING:
    from cppo_bench.runner.rejudge import Rejudged
    from cppo_bench.verifier.records import VerifyResult

Note = Callable[[str], None] | None
RESULT_FIELDS = ("verdict", "passed", "tests_passed", "tests_total", "time_s", "first_failed",
                 "detail", "cpu_s", "peak_memory_mb", "sandbox")  # fmt: skip
VERDICT_ORDER = ("AC", "WA", "TLE", "MLE", "RE", "CE", "EMPTY")
# setting -> the verifier Limits field it sets
LIMIT_FIELDS = {"time_limit": "time_s", "memory_mb": "memory_mb", "output_mb": "output_mb"}
UNSAFE_ENV = "CPPO_UNSAFE_NO_SANDBOX"  # read by every sandbox this process starts


@dataclass(frozen=True)
class VerifyConfig:
    """Every setting of `cppo-bench verify` (docs/options.md lists them)."""

    bench: str | None = setting(None, "Benchmark whose hidden tests judge the programs.")
    data: str | None = setting(None, "Local copy of the benchmark's data (default: its dataset).")
    loader_options: dict[str, Any] = setting({}, "Options of the benchmark's loader (KEY=VALUE).")
    tests: str | None = setting(None, "An augmented test set folder (`cppo-bench augment`).")
    run: str | None = setting(
        None,
        "Judge a stored run's completions again (today's verifier, --tests) into a NEW run "
        "beside it (or under --runs); the stored run is never changed.",
    )
    runs: str | None = setting(
        None, "--run: the run store the re-judged run goes to (default: the source's store)."
    )
    programs: str | None = setting(
        None,
        'JSONL, one {"problem_id": ..., "code": ...} per line (code may be a whole model '
        "completion).",
    )
    workers: int | None = setting(None, "Parallel sandboxes [cores].")
    all_tests: bool = setting(False, "Run every test, not just up to the first failure.")
    reference: bool = setting(
        False, "Verify the problems' own reference solutions (a data-quality audit)."
    )
    cache_dir: str | None = setting(
        None, "Verdict cache: re-verifying an identical program never re-executes it."
    )
    time_limit: float | None = setting(
        None, "Default per-test CPU seconds for problems without their own [10]."
    )
    memory_mb: int | None = setting(
        None, "Default address-space limit for problems without their own [256]."
    )
    output_mb: int | None = setting(None, "Output cap per test [64].")
    unsafe_no_sandbox: bool = setting(
        False,
        "Run programs even where no sandbox mode can make them unprivileged (as root, "
        "unisolated). Only for trusted code.",
    )

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        """Paths as text (a CLI path option gives a Path)."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}

    def limits(self) -> dict[str, Any]:
        """The verifier limits given (cppo_bench.verifier.Limits field -> value)."""
        given = {LIMIT_FIELDS[name]: getattr(self, name) for name in LIMIT_FIELDS}
        return {k: v for k, v in given.items() if v is not None}

    def __post_init__(self) -> None:
        from cppo_bench.verifier import Limits

        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers {self.workers}: give 1 or more")
        if self.run is not None:
            if self.programs is not None or self.reference:
                raise ValueError("run judges a stored run: no programs or reference")
        elif self.runs is not None:
            raise ValueError("runs goes with run (the store a re-judged run goes to)")
        elif self.bench is None:
            raise ValueError("missing bench (or give run, a stored run to judge again)")
        elif self.reference == (self.programs is not None):
            raise ValueError("give exactly one of programs (a file) and reference")
        try:  # the verifier's one range check, before any data loads, naming the setting
            Limits(**self.limits())
        except DataError as exc:
            message = str(exc)
            for name, field in LIMIT_FIELDS.items():
                message = message.replace(f"limit {field}:", f"{name}:")
            raise ValueError(message) from None


@dataclass(frozen=True)
class Verified:
    """What `verify_programs` judged: one row per program (its record and verdict fields),
    and the lines of the programs file that could not be verified."""

    rows: list[dict[str, Any]]
    errors: list[str]
    reference: bool

    def tally(self) -> list[tuple[str, int, float]]:
        """(verdict, count, share) of each verdict that occurs, in the usual order."""
        counts = Counter(r["verdict"] for r in self.rows)
        n = max(len(self.rows), 1)
        return [(v, counts[v], counts[v] / n) for v in VERDICT_ORDER if counts.get(v)]

    def solved(self) -> tuple[int, int]:
        """(problems with a passing program, problems with a program)."""
        problems = {r["problem_id"] for r in self.rows}
        return len({r["problem_id"] for r in self.rows if r["passed"]}), len(problems)

    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if not r["passed"]]


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


def _config(config: VerifyConfig | None, settings: dict[str, Any]) -> VerifyConfig:
    if config is None:
        return build_config(VerifyConfig, settings)
    if settings:
        raise DataError("verify: give a VerifyConfig or settings, not both")
    return config


def _allow_unsafe(config: VerifyConfig) -> None:
    if config.unsafe_no_sandbox:  # read by every sandbox this process starts (launch)
        os.environ[UNSAFE_ENV] = "1"


def verify_programs(
    config: VerifyConfig | None = None,
    *,
    on_note: Note = None,
    progress: bool = False,
    **settings: Any,
) -> Verified:
    """What `cppo-bench verify --programs FILE` / `--reference` does: the programs file's
    lines (or the reference solutions) judged against `bench`'s tests (plus a test set's).
    A bad line of the file is an error of the result (and an `on_note` line), never the end of
    the others; nothing to verify at all is a DataError. `on_note` gets the lines worth saying
    (skipped records, the tests a test set added, bad lines)."""
    from cppo_bench.api.programs import (
        named_problems,
        problem_index,
        read_programs,
        reference_records,
        selection_for,
    )
    from cppo_bench.api.testsets import add_tests, read_tests
    from cppo_bench.benchmarks.load import load_result

    c = _config(config, settings)
    if c.run is not None or c.bench is None:
        raise DataError("verify_programs: give bench and programs or reference (run: rejudge_run)")
    note = on_note or (lambda line: None)
    _allow_unsafe(c)
    test_set = read_tests(c.tests, c.bench)  # before the data: a wrong set fails fast
    options = dict(c.loader_options)
    if c.programs is not None:
        options = selection_for(c.bench, options, named_problems(Path(c.programs)))
    loaded = load_result(c.bench, c.data, unique=False, **options)
    for skipped in loaded.errors[:10]:
        note(f"skipped record: {skipped}")
    with_tests, line = add_tests(loaded.problems, test_set)
    if line is not None:
        note(line)
    problems, ambiguous = problem_index(with_tests)
    errors: list[str] = []
    if c.programs is None:
        records = reference_records(problems)
    else:
        records, errors = read_programs(Path(c.programs), problems, ambiguous)
    for error in errors:
        note(f"error: {error}")
    if not records:  # nothing to verify is an input error, not an empty success
        what = f"{c.programs}: no programs to verify" if c.programs else "no reference solutions"
        raise DataError(what + (f" ({len(errors)} bad line(s))" if errors else ""))
    results = verify([problems[r["problem_id"]] for r in records], [r["code"] for r in records],
                     workers=c.workers, all_tests=c.all_tests, cache_dir=c.cache_dir,
                     progress=progress, **c.limits())  # fmt: skip
    rows = []
    for record, result in zip(records, results, strict=True):
        d = result.to_dict()
        rows.append(dict(record, **{k: d[k] for k in RESULT_FIELDS}))
    return Verified(rows, errors, c.reference)


def rejudge_run(
    config: VerifyConfig | None = None,
    *,
    on_note: Note = None,
    progress: bool = False,
    **settings: Any,
) -> Rejudged:
    """What `cppo-bench verify --run DIR` does: the stored run judged again (today's verifier,
    `tests`) into a new run under `runs` (default: the source's store), the source unchanged.
    A `bench` other than the run's is refused before anything loads."""
    from cppo_bench.api.testsets import read_tests
    from cppo_bench.benchmarks.loadreport import load_line
    from cppo_bench.store.runs import read_manifest
    from cppo_bench.util.termsafe import quote

    c = _config(config, settings)
    if c.run is None:
        raise DataError("rejudge_run: give run, the stored run to judge again")
    _allow_unsafe(c)
    source = read_manifest(Path(c.run))
    if c.bench is not None and c.bench != source.bench:
        raise DataError(f"bench {quote(c.bench)}, but {c.run} is a {source.bench} run")
    test_set = read_tests(c.tests, source.bench)
    note = on_note or (lambda line: None)
    return rejudge(c.run, out=c.runs, data=c.data, loader_options=dict(c.loader_options),
                   tests=test_set, workers=c.workers, progress=progress,
                   on_loaded=lambda r: note(load_line(source.bench, r)))  # fmt: skip
