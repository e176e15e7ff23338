"""Benchmark problems -> lm-eval documents (the `custom_dataset` of every cppo_* task).

lm-eval builds a task by calling `custom_dataset(**metadata, **dataset_kwargs)` and expects
`{split: datasets.Dataset}`. We load problems with this toolkit's own loaders, render the
prompt with the `direct` method's renderer (so lm-eval sees exactly the prompt of
`cppo-bench run --method direct`), and keep the Problems themselves (tests, limits,
checker) in a process-wide table keyed by uid. Documents stay small on purpose: lm-eval
copies each document into every logged sample, and LiveCodeBench's hidden tests run to
megabytes per problem.

Where the data comes from, first match wins:
  1. `--metadata <bench>_data=PATH` (lm-eval merges `--metadata` into every task's metadata);
  2. the environment variable CPPO_BENCH_DATA_<BENCH> (see `DATA_ENV`);
  3. the benchmark's Hugging Face dataset (fails offline with one line naming 1 and 2).
Loader options (e.g. the LCB release) come from the task's `dataset_kwargs.options`,
updated by `--metadata '{"<bench>_options": {...}}'`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.lm_eval_tasks import DATA_ENV
from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import info, quote, warn

log = logging.getLogger(__name__)

SPLIT = "test"
DEFAULT_PASS_AT = (1, 4)

# Every problem a cppo_* task has loaded in this process, keyed by where it came from too:
# two tasks may read different copies (or loader options) of one benchmark.
_PROBLEMS: dict[tuple[str, str, str, str], Problem] = {}


def _key(benchmark: str, source: str | None, options: Mapping[str, Any], uid: str):
    return (benchmark, source or "", json.dumps(dict(options), sort_keys=True), uid)


def data_source(benchmark: str, metadata: Mapping[str, Any]) -> str | None:
    """The local path to read `benchmark` from, or None for its hub dataset."""
    explicit = metadata.get(f"{benchmark}_data")
    if explicit:
        return str(explicit)
    env = DATA_ENV.get(benchmark)
    return (os.environ.get(env) or None) if env else None


def loader_options(
    benchmark: str, options: Mapping[str, Any] | None, metadata: Mapping[str, Any]
) -> dict[str, Any]:
    """The task's loader options, updated by `--metadata '{"<bench>_options": {...}}'`."""
    merged = dict(options or {})
    override = metadata.get(f"{benchmark}_options")
    if override is not None:
        if not isinstance(override, Mapping):
            raise DataError(
                f"metadata {benchmark}_options must be a mapping, got {quote(override)}"
            )
        merged.update(override)
    return merged


def parse_pass_at(value: Any) -> list[int]:
    """Validated, sorted list of the k values to report (metadata `pass_at`)."""
    values = [value] if isinstance(value, int) else list(value or DEFAULT_PASS_AT)
    if not values or not all(type(k) is int and k >= 1 for k in values):
        raise DataError(f"metadata pass_at must be positive integers, got {quote(value)}")
    return sorted(set(values))


def render_prompt(problem: Problem) -> tuple[str, str]:
    """(system, user) text of the direct-solve prompt, from the one renderer the
    `direct` method uses. An empty system text means "no system message"."""
    from cppo_bench.methods.direct import render_messages

    system, user = "", ""
    for message in render_messages(problem):
        if message["role"] == "system":
            system = message["content"]
        elif message["role"] == "user":
            user = message["content"]
        else:  # an assistant prefill has no lm-eval equivalent we could rely on
            raise ValueError(f"direct prompt has an unexpected {quote(message['role'])} message")
    return system, user


def _to_doc(
    benchmark: str, problem: Problem, source: str | None, options: dict[str, Any], ks: list[int]
) -> dict[str, Any]:
    system, user = render_prompt(problem)
    return {
        "uid": problem.uid,
        "benchmark": benchmark,  # the registry name, for reloading (see problem_for)
        "problem_id": problem.problem_id,
        "system": system,
        "prompt": user,
        "pass_at": ks,
        # enough to reload the problem if this process has not loaded it (see problem_for)
        "data_source": source or "",
        "loader_options": json.dumps(options, sort_keys=True),
    }


def load_problems(benchmark: str, source: str | None, options: Mapping[str, Any]) -> list[Problem]:
    """Load through the toolkit's loaders, register the problems, report skipped records.
    The option `tests` (an augmented test set, cppo-bench augment) is not the loader's: it
    adds the set's tests to the problems."""
    from cppo_bench.benchmarks import load_benchmark

    env = DATA_ENV.get(benchmark, "CPPO_BENCH_DATA_<BENCH>")
    hint = f"in lm-eval, instead of --data: set {env}=PATH or --metadata {benchmark}_data=PATH"
    loader = {k: v for k, v in options.items() if k != "tests"}
    try:
        result = load_benchmark(benchmark, source, **loader)
        if options.get("tests"):
            from cppo_bench.augment.store import read_test_set, with_tests

            result.problems = with_tests(result.problems, read_test_set(str(options["tests"])))
    except DataError as exc:
        raise DataError(f"{exc} ({hint})") from None
    for error in result.errors:
        warn(log, "cppo-bench: skipped %s", str(error))
    if not result.problems:
        raise DataError(f"{result.source or benchmark}: no usable problems ({hint})")
    for problem in result.problems:
        _PROBLEMS[_key(benchmark, source, options, problem.uid)] = problem
    return result.problems


def load_dataset(
    benchmark: str,
    options: Mapping[str, Any] | None = None,
    pass_at: Sequence[int] | int | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """`custom_dataset` hook: {"test": datasets.Dataset} of prompt documents.

    `metadata` is everything lm-eval passes besides our own keys (the YAML metadata,
    `--metadata`, and `--model_args`, which lm-eval merges in); only `<bench>_data` and
    `<bench>_options` are read from it."""
    import datasets

    source = data_source(benchmark, metadata)
    opts = loader_options(benchmark, options, metadata)
    ks = parse_pass_at(pass_at)
    problems = load_problems(benchmark, source, opts)
    docs = [_to_doc(benchmark, p, source, opts, ks) for p in problems]
    info(log, "cppo-bench: %s: %d problems from %s", benchmark, len(docs), str(source or "the hub"))
    return {SPLIT: datasets.Dataset.from_list(docs)}


def problem_for(doc: Mapping[str, Any]) -> Problem:
    """The Problem behind an lm-eval document (reloading it if this process never did)."""
    source = doc.get("data_source") or None
    options = json.loads(doc.get("loader_options") or "{}")
    key = _key(doc["benchmark"], source, options, doc["uid"])
    if key not in _PROBLEMS:
        load_problems(doc["benchmark"], source, options)
    try:
        return _PROBLEMS[key]
    except KeyError:
        raise DataError(
            f"{doc['uid']}: not found when reloading {source or 'its hub dataset'}"
        ) from None
