"""One schema for every file a run store holds, checked on read.

A run store may come from anyone (a shared results folder, a colleague's tarball), so a
reader never trusts a stored value's type or range: `"passed": "false"` must not count as a
pass, `"k": "four"` must not reach the metrics, a record of a problem the manifest does not
list must not be counted. Each kind of stored document is a `Schema` registered by name in
`SCHEMAS` (`run_manifest`, `run_record`; training artifacts register theirs the same way);
`check` returns the first thing wrong, as a short phrase naming the field, and the reader
puts the file (and line) in front of it.

This module is the one declaration of every field a reader uses, as deep as the readers go:
the open `extra` objects of a manifest and a record (`MANIFEST_EXTRA`, `RECORD_EXTRA`) and a
plan validity report (`VALIDITY`) are schemas of their own. A run's `method_options` are its
method's to check (cppo_bench.methods.stored, at the reading edge: the store imports no
method); what the store's readers need from the method, its pass@k rule, the run records
when it is made (`passk`, checked here). The door (`cppo_bench.store.runs.read_manifest`,
`read_records`) checks a document once, so no reader meets an unchecked value; a reader that
reads an undeclared key fails tests/store/test_schema_fields.py. To add a field, declare it here.

Names that later reach generated shell commands, report cells or the terminal (method,
benchmark, model, backend, problem ids, checkpoint tags) must be printable: no control
characters (a newline in a model name would end a comment in `fill_missing.sh`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cppo_bench.store.outcomes import ESTIMATORS, SELECTS
from cppo_bench.util.checks import (  # noqa: F401  (re-exported: the schema's vocabulary)
    MAX_INT,
    MAX_NAME,
    MAX_PROBLEMS,
    Check,
    Schema,
    boolean,
    context,
    has_control,
    integer,
    list_of,
    mapping,
    mapping_of,
    matches,
    name,
    number,
    one_of,
    optional,
    scalar,
    text,
)
from cppo_bench.util.registry import Registry
from cppo_bench.util.sampling import MAX_K
from cppo_bench.util.sampling import SAMPLING_RANGES as _SAMPLING_RANGES
from cppo_bench.util.termsafe import quote

# token counts (a record's, a branch's, a generation cache line's): far above any real run,
# and low enough that the sum of 2**20 of them still fits an int64 (`stats tokens`)
MAX_TOKENS = 1 << 40
# what a command and the API accept for sampling and limits: the same ranges are what the
# readers accept back from the store (run_manifest's `sampling`) and the verifier applies
VERDICT = re.compile(r"^[A-Za-z0-9_@.:+-]{1,64}$")  # AC, WA, ..., or a maj@K answer check


# --- schemas ---------------------------------------------------------------------------------

SCHEMAS: Registry[Schema] = Registry("schema")


def _shard(v: Any) -> str | None:
    if v is None:
        return None
    why = mapping(v)
    if why:
        return why
    if set(v) != {"index", "count", "positions"}:
        return "expected exactly index, count and positions"
    return (
        integer(1, MAX_PROBLEMS)(v["count"])
        or integer(0, MAX_PROBLEMS)(v["index"])
        or list_of(integer(0, MAX_PROBLEMS))(v["positions"])
    )


# the ranges SamplingParams itself takes (cppo_bench.util.sampling): one range per setting
SAMPLING_RANGES: dict[str, Check] = dict(_SAMPLING_RANGES)


def _sampling(v: Any) -> str | None:
    why = mapping(v)
    if why:
        return why
    for key, check in SAMPLING_RANGES.items():
        if v.get(key) is not None and check(v[key]):
            return f"{key}: {check(v[key])}"
    for key, value in v.items():
        if value is not None and type(value) not in (int, float, str, bool):
            return f"{key}: expected a number or string, got {type(value).__name__}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{key}: {value} is not finite"
        if isinstance(value, str) and has_control(value):
            return f"{key}: holds a control character"
    return None


def _options(v: Any) -> str | None:
    """Method options: scalars or small lists of them; keys and strings printable (they
    are written into the `cppo-bench run` commands a report prints)."""
    why = mapping(v)
    if why:
        return why
    for key, value in v.items():
        if name(key):
            return f"option {quote(key)}: {name(key)}"
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is not None and type(item) not in (int, float, str, bool):
                return f"option {quote(key)}: expected a scalar, got {type(item).__name__}"
            if isinstance(item, str) and has_control(item):
                return f"option {quote(key)}: holds a control character"
            if isinstance(item, float) and not math.isfinite(item):
                return f"option {quote(key)}: {item} is not finite"
    return None


def _tests_counts(d: dict[str, Any]) -> str | None:
    if d.get("public_only", 0) > d.get("problems", 0):
        return "field 'public_only': more than 'problems'"
    return None


def _data(v: Any) -> str | None:
    """extra.data (cppo_bench.runner.rundata): the resolved data path, its bytes' sha256 and
    the loader options, all read back to reload and rerun the run (`run --like`)."""
    why = mapping(v)
    if why:
        return why
    for key in ("path", "file_sha256"):
        if (got := optional(text)(v.get(key))) or (
            isinstance(v.get(key), str) and has_control(v[key])
        ):
            return f"{key}: {got or 'holds a control character'}"
    return _options(v.get("options", {}))


# manifest.extra: what the readers read of it, declared once, as deep as they read it
MANIFEST_EXTRA = context(
    "run_manifest.extra",
    {
        # a trained checkpoint's tags: they place a run in a report (cppo_bench.report.run_index)
        "trained": optional(name),
        "base_model": optional(name),
        "train_seed": optional(integer()),
        "chunk_size": integer(1, MAX_PROBLEMS),
        "model_id": optional(name),  # the model the backend reported serving
        # what else makes the samples (cppo_bench.store.identity): the data's content hash,
        # the release; further keys are scalars (one identity field each)
        "identity": context(
            "identity",
            # model_sha256: a local model's content (cppo_bench.store.identity.model_fingerprint)
            {"data_sha256": text, "release": name, "model_sha256": text},
            relations=(lambda d: mapping_of(name, scalar, 64)(d),),
        ),
        # the data's test kinds and counts (cppo_bench.benchmarks.testsource.describe)
        "tests": Schema(
            "tests",
            {
                "problems": integer(0, MAX_PROBLEMS),
                "tests": mapping_of(name, integer(0, MAX_INT), 64),
                "public_only": integer(0, MAX_PROBLEMS),
            },
            all_optional=True,
            relations=(_tests_counts,),
        ),
        # judged with an augmented test set (cppo-bench augment --tests)
        "test_set": context("test_set", {"path": text, "hash": name, "tests": integer(0)}),
        # judged again from another run's completions (cppo_bench.runner.rejudge)
        "rejudged": context(
            "rejudged", {"from": text, "from_config": name, "verifier": text, "at": text}
        ),
        "invocations": list_of(mapping),  # each resume: when, which version
        "merged_from": list_of(name),  # `runs merge`: the shard directories
        "summary": mapping,  # written for people; readers compute their own
        "data": _data,  # the data the run loaded (cppo_bench.runner.rundata): `run --like`
    },
)

# one plan tuple's validity report (cppo_bench.plan.contract.ValidityReport.to_dict, plus
# "strict_failed"), as cppo_bench.plan.validity and cppo_bench.report.measures read it
_positions = list_of(integer(0, MAX_INT), MAX_K)
VALIDITY = context(
    "plan_validity",
    {
        "k": integer(0, MAX_K),
        "count": integer(0, MAX_INT),
        "parse_mode": optional(text),
        "valid": boolean,
        "strict_failed": boolean,
        "fill_rule": optional(text),
        "n_duplicates": integer(0, MAX_K),
        "duplicates": list_of(_positions, MAX_K),
        "filled": _positions,
        "issues": list_of(text, MAX_K),
        **{key: _positions for key in ("words", "empty", "code_leak", "answer_leak")},
        **{key: _positions for key in ("over_words", "substeps")},
    },
)

# a record's extra: the problem's metadata (stats --by), maj@K, the planner's finish
# reasons and the fallbacks a method counted (cppo_bench.plan.validity)
RECORD_EXTRA = context(
    "run_record.extra",
    {
        "difficulty": optional(text),
        "platform": optional(text),
        "contest_date": optional(text),
        "maj_at_k": boolean,
        "planner_finish": list_of(optional(text), MAX_K),
        "planner_completions": list_of(text, MAX_K),
        "fallbacks": mapping_of(name, integer(0, MAX_INT), 64),
        "skills": list_of(integer(0, MAX_INT), MAX_K),
    },
)


def _passk(v: Any) -> str | None:
    """The pass@k rule a run recorded when made (`RunManifest.passk`); null in a manifest of
    a run made before it was recorded (the reading edge derives it then)."""
    if v is None:
        return None
    why = mapping(v)
    if why:
        return why
    if set(v) != {"estimator", "select"}:
        return "expected the keys estimator and select"
    if v["estimator"] not in ESTIMATORS:
        return f"estimator: must be one of {', '.join(ESTIMATORS)}"
    if v["select"] not in SELECTS:
        return f"select: must be one of {', '.join(SELECTS)}"
    return None


def _ids_consistent(d: dict[str, Any]) -> str | None:
    ids, seen = d["problem_ids"], set()
    for i in ids:  # one pass: a million repeated ids cost a million set lookups, not n**2
        if i in seen:
            return f"problem id {quote(i, 60)} is listed twice"
        seen.add(i)
    shard = d.get("shard")
    if shard is not None:
        if not shard["index"] < shard["count"]:
            return "shard index is not below the shard count"
        if len(shard["positions"]) != len(ids):
            return "shard positions and problem_ids differ in length"
    if d.get("selected", 0) > MAX_PROBLEMS or d.get("dataset_size", 0) > MAX_PROBLEMS:
        return "selected/dataset_size too large"
    return None


SCHEMAS.register("run_manifest")(
    Schema(
        "run_manifest",
        {
            "method": name,
            "bench": name,
            "model": name,
            "backend": name,
            "k": integer(1, MAX_K),
            "seed": integer(),
            "sampling": _sampling,
            "method_options": _options,
            "data_source": text,
            "problem_ids": list_of(name),
            "problem_ids_hash": text,
            "package_version": text,
            "git_commit": optional(text),
            "created_at": text,
            "status": one_of("running", "complete"),
            "extra": MANIFEST_EXTRA,
            "dataset_hash": text,
            "dataset_size": integer(0, MAX_PROBLEMS),
            "selected": integer(0, MAX_PROBLEMS),
            "shard": _shard,
            "passk": _passk,
        },
        optional=frozenset({"extra", "dataset_hash", "dataset_size", "selected", "shard", "passk"}),
        relations=(_ids_consistent,),
    )
)


def _counts(d: dict[str, Any]) -> str | None:
    if d.get("tests_passed", 0) > d.get("tests_total", 0):
        return "tests_passed exceeds tests_total"
    return None


BRANCH = SCHEMAS.register("run_branch")(
    Schema(
        "run_branch",
        {
            "index": integer(0, MAX_K),
            "code": text,
            "completion": text,
            "verdict": matches(VERDICT, "a verdict like AC or WA"),
            "passed": boolean,
            "tests_passed": integer(0),
            "tests_total": integer(0),
            "time_s": number(),
            "solver_tokens": integer(0, MAX_TOKENS),
            "plan": optional(text),
            "tuple_index": integer(0, MAX_K),
            "answer": optional(text),
            "finish_reason": text,
            "seed": integer(),
            "first_failed": optional(integer(0)),
            "detail": text,
        },
        optional=frozenset(
            {
                "tests_passed",
                "tests_total",
                "time_s",
                "solver_tokens",
                "plan",
                "tuple_index",
                "answer",
                "finish_reason",
                "seed",
                "first_failed",
                "detail",
            }
        ),
        relations=(_counts,),
    )
)


def _branches(v: Any) -> str | None:
    if not isinstance(v, list) or not v:
        return "expected a non-empty list of branches"
    if len(v) > MAX_K:
        return f"more than {MAX_K} branches"
    for i, b in enumerate(v):
        why = BRANCH.check(b)
        if why:
            return f"branch {i}: {why}"
    return None


SCHEMAS.register("run_record")(
    Schema(
        "run_record",
        {
            "problem_id": name,
            "branches": _branches,
            "planner_tokens": integer(0, MAX_TOKENS),
            "solver_tokens": integer(0, MAX_TOKENS),
            "plans": list_of(list_of(text, MAX_K), MAX_K),
            "plan_validity": list_of(VALIDITY, MAX_K),
            "label": optional(text),
            "extra": RECORD_EXTRA,
        },
        optional=frozenset(
            {"planner_tokens", "solver_tokens", "plans", "plan_validity", "label", "extra"}
        ),
    )
)


def check_record(doc: Any, ids: Mapping[str, Any] | set[str] | None, k: int | None) -> str | None:
    """A run record's problem: its schema, then its place in the run (`ids`: the problem
    ids the manifest lists; `k`: the attempts per problem)."""
    why = SCHEMAS.get("run_record").check(doc)
    if why:
        return why
    if ids is not None and doc["problem_id"] not in ids:
        return f"problem {quote(doc['problem_id'])} is not in the run's manifest"
    if k is not None and len(doc["branches"]) != k:
        return f"{len(doc['branches'])} branches, the run has k={k}"
    return None


# --- the door: options checked with the readers' ranges before any work starts -----------------

RUN_OPTIONS: dict[str, Check] = {
    "method": name,
    "bench": name,
    "model": optional(name),
    "backend": name,
    "k": integer(1, MAX_K),
    **SAMPLING_RANGES,
}


def check_options(options: Mapping[str, Any], checks: Mapping[str, Check]) -> None:
    """Raise ValueError ("option 'temperature': nan is not finite") for the first option
    whose value the stored-document schema would refuse; options not listed pass."""
    for key, check in checks.items():
        if key in options:
            why = check(options[key])
            if why:
                raise ValueError(f"option {quote(key)}: {why}")


token_count = integer(0, MAX_TOKENS)  # as the run store accepts it (the gen cache too)
