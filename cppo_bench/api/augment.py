"""`cppo-bench augment`: stronger tests for a benchmark (docs/augment.md). `AugmentConfig`
holds every setting; `augment` takes it (or its fields as keywords) and returns the test set
with its tally. The work is cppo_bench.augment's."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from cppo_bench.api.config import required, setting, take_config
from cppo_bench.errors import DataError, SettingError
from cppo_bench.util.termsafe import quote

# progress(total, already_done) -> a context yielding the function told each problem done
Progress = Callable[[int, int], AbstractContextManager[Callable[[int], None]]]


@dataclass(frozen=True, kw_only=True)
class AugmentConfig:
    """Every setting of `cppo-bench augment`."""

    bench: str = required("Benchmark (see `cppo-bench data list`).")
    data: str | None = setting(None, "Local copy of the benchmark's data (default: its dataset).")
    loader_options: dict[str, Any] = setting({}, "Options of the benchmark's loader (KEY=VALUE).")
    out: str = required("Folder of the test set (made, or resumed when it holds this set).")
    per_problem: int = setting(10, "New tests wanted per problem.")
    seed: int = setting(0, "Mutation seed.")
    oracle: Literal["references", "model"] = setting(
        "references",
        "Whose outputs make the expected ones: the dataset's reference solutions, or ones a "
        "model writes (--generator-model; for benchmarks without references, e.g. "
        "LiveCodeBench).",
    )
    references: int = setting(3, "Distinct references run as the oracle (two at least must agree).")
    generator_model: str | None = setting(None, "--oracle model: the model.")
    generator_backend: str = setting(
        "hf", "--oracle model: its backend (name or package.module:factory)."
    )
    time_limit: float = setting(
        2.0,
        "CPU seconds per reference run on problems without their own limit: a reference that "
        "needs more is taken as an input outside the constraints.",
    )
    limit: int | None = setting(None, "First N problems only.")
    workers: int | None = setting(None, "Parallel sandboxes (default: the CPUs).")

    @staticmethod
    def normalize(values: Mapping[str, Any]) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}

    def __post_init__(self) -> None:
        if self.oracle == "model" and not self.generator_model:
            raise SettingError(
                "generator_model", "needed with oracle model (whose references it writes)"
            )
        for name, low, high in (("per_problem", 1, 1000), ("references", 2, 20)):
            if not low <= getattr(self, name) <= high:
                raise SettingError(name, f"must be in [{low}, {high}], got {getattr(self, name)}")
        if not self.time_limit > 0:
            raise SettingError("time_limit", f"must be > 0, got {quote(self.time_limit)}")
        for name in ("limit", "workers"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise SettingError(name, f"must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class Augmented:
    """The test set `augment` made or resumed, and its tally over every problem in it."""

    test_set: Any  # cppo_bench.augment.store.TestSet
    problems: int
    augmented: int
    tests_added: int
    per_problem: tuple[float, int, int]  # mean, min, max tests per augmented problem
    skipped: int
    none_kept: int  # problems where no candidate test was kept
    skip_reasons: tuple[tuple[str, int], ...]  # the five most common, with their counts
    done_now: int
    seconds: float
    model_references: bool  # the oracle was model-written references

    @property
    def no_references(self) -> bool:
        """No problem had two references to agree (a benchmark that ships none)."""
        return self.problems > 0 and not self.augmented and not self.model_references


def model_references(problems: list, backend_name: str, model: str | None, n: int,
                     seed: int) -> list:  # fmt: skip
    """The problems with `n` reference programs written by a model (the `direct` method
    through any backend) in place of the dataset's: the `oracle="model"` references."""
    from cppo_bench.api.names import open_backend
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.methods import METHODS

    method = METHODS.get("direct").from_options({})
    with open_backend(backend_name, model, {}) as backend:
        outputs = method.run(problems, backend, k=n, seed=seed, sampling=SamplingParams())
    by_id = {o.problem_id: o for o in outputs}
    return [
        replace(p, reference_solutions=tuple(a.completion for a in by_id[p.problem_id].attempts))
        for p in problems
    ]


def augment(
    config: AugmentConfig | None = None, *, progress: Progress | None = None, **settings: Any
) -> Augmented:
    """Add tests to every codegen problem of `bench`: mutated inputs whose outputs the
    references agree on, stored in the test set folder `out` (resumed when it holds the same
    set; another configuration is one line naming the setting)."""
    import os
    import time

    from cppo_bench.augment.generate import Settings, augment_problem
    from cppo_bench.augment.mutate_call import mutator_name
    from cppo_bench.augment.store import append, open_test_set
    from cppo_bench.backends.base import ModelLoadError
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.store.runs import ids_hash
    from cppo_bench.util.registry import UnknownNameError
    from cppo_bench.verifier import Limits

    c = take_config(AugmentConfig, config, settings)
    if c.oracle == "model":  # an unknown or unimportable backend: before the set is made
        from cppo_bench.api.names import check_backend

        check_backend(c.generator_backend)
    loaded = load_result(c.bench, c.data, limit=c.limit, **c.loader_options)
    problems = [p for p in loaded.problems if p.task == "codegen"]
    ts = open_test_set(Path(c.out), {
        "bench": c.bench, "data_source": loaded.source or c.bench,
        "dataset_hash": ids_hash([p.problem_id for p in problems]),
        "per_problem": c.per_problem, "seed": c.seed, "oracle": c.oracle,
        "references": c.references,
        "generator_model": c.generator_model if c.oracle == "model" else None,
        "mutator": mutator_name(), "time_limit_s": c.time_limit,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    })  # fmt: skip
    todo = [p for p in problems if p.problem_id not in ts.records]
    if c.oracle == "model" and todo:
        try:
            todo = model_references(todo, c.generator_backend, c.generator_model, c.references,
                                    c.seed)  # fmt: skip
        except (ModelLoadError, UnknownNameError) as exc:
            raise DataError(f"--generator-model: {exc}") from None
    work = Settings(c.per_problem, c.seed, c.references, c.workers or os.cpu_count() or 1,
                    Limits(time_s=c.time_limit), c.oracle)  # fmt: skip
    t0 = time.perf_counter()
    done = len(problems) - len(todo)
    with progress(len(problems), done) if progress is not None else nullcontext(None) as bar:
        for p in todo:
            append(ts, augment_problem(p, work))
            if bar is not None:
                bar(1)
    return tally(ts, len(todo), time.perf_counter() - t0)


def tally(ts: Any, done_now: int, seconds: float) -> Augmented:
    """The test set's counts over every problem in it (those of earlier calls too)."""
    recs = list(ts.records.values())
    status = Counter(r.get("status") for r in recs)
    added = [len(r.get("tests", [])) for r in recs if r.get("status") == "augmented"]
    reasons = Counter(r.get("reason") for r in recs if r.get("status") == "skipped")
    return Augmented(
        test_set=ts, problems=len(recs), augmented=status.get("augmented", 0),
        tests_added=sum(added),
        per_problem=(sum(added) / len(added) if added else 0.0, min(added, default=0),
                     max(added, default=0)),
        skipped=status.get("skipped", 0), none_kept=status.get("none_kept", 0),
        skip_reasons=tuple((str(r), n) for r, n in reasons.most_common(5)),
        done_now=done_now, seconds=seconds,
        model_references=ts.config.get("oracle") == "model",
    )  # fmt: skip
