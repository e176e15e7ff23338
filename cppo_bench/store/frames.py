"""Per-problem results as pandas DataFrames: `load_runs` (a run store) and `read_outcomes`
(the outcome CSV of cppo_bench/metrics/table.py); cppo_bench.stats.read turns a frame into
the OutcomeRows the metrics take, so `cppo_bench.stats` and `cppo-bench stats` compute from
the same frame.

A run frame has one row per benchmark, method, model, trained-from (base model), seed and
problem, read through the validated run-store reader (cppo_bench.store.index: manifests and
records checked against cppo_bench.store.schema, shards merged, one run per configuration and
seed). Columns:

    benchmark, method, model      the manifest's; `method_label` is what stats group by:
                                  the method, or "method[model]" when a benchmark/method was
                                  run with several models (so they are never averaged)
    trained, base_model, train_seed   a trained checkpoint's tags (None: inference-only)
    seed, problem_id, k           the run's seed, the problem, the budget
    estimator, select             how pass@k < K is scored for this run (the rule it
                                  recorded when made, `passk`; else its method's
                                  `passk_rule` on its options): "unbiased" for
                                  exchangeable samples, "first" (with its K-of-4 `select`)
                                  for branches in a planner's / hint list's order
    outcomes                      per-branch 0/1 in rollout order, e.g. "0110"
    n_branches, n_passed          len(outcomes) and its count of 1s
    planner_tokens, solver_tokens decoded tokens for the problem (prompt excluded)
    run_dir                       the run's directory
    tests                         what the score rests on: the data's test kinds and counts
                                  and its release (cppo_bench.benchmarks.testsource), "" if unrecorded
    answers, answer_label, texts, texts_kind, validity, dataset_size
                                  what maj@K, diversity and the plan-validity tally read
    difficulty, platform, contest_date   the problem's, as the record keeps them (runs made
                                  before records kept them: None; `verify --run` adds them)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cppo_bench.errors import DataError
from cppo_bench.store.outcomes import ESTIMATORS, tuple_texts
from cppo_bench.util.termsafe import quote

if TYPE_CHECKING:
    import pandas as pd

RUN_COLUMNS = (
    "benchmark", "method", "model", "trained", "base_model", "train_seed", "seed",
    "problem_id", "k", "estimator", "select", "outcomes", "n_branches", "n_passed", "planner_tokens",
    "solver_tokens", "method_label", "run_dir", "answers", "answer_label", "texts",
    "texts_kind", "validity", "dataset_size", "difficulty", "platform", "contest_date", "tests",
)  # fmt: skip
META_COLUMNS = ("difficulty", "platform", "contest_date")  # a problem's, for grouping
_TRUE = {"1", "true", "yes", "t", "y"}
_FALSE = {"0", "false", "no", "f", "n"}


def _meta(extra: dict[str, Any]) -> dict[str, str | None]:
    """The problem's difficulty, platform and contest date a record keeps (None if not,
    or not text: a record is data)."""
    return {
        key: extra[key] if isinstance(extra.get(key), str) and extra[key] else None
        for key in ("difficulty", "platform", "contest_date")
    }


def _bits(outcomes: Any) -> str:
    return "".join("1" if o else "0" for o in outcomes)


# a stored run's pass@k rule, asked of its method at the reading edge (the store imports no
# method): cppo_bench.methods.stored.stored_rule(manifest, where) -> (estimator, select), or
# a DataError naming the manifest (then the run is named and left out)
RuleOf = Callable[[Any, Path], tuple[str, str]]


def load_runs(
    path: str | Path,
    *,
    rule_of: RuleOf,
    warn: Callable[[str], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Every run under `path` (a run store, or one run directory) as one DataFrame row per
        problem record (columns in this module's docstring). A run whose manifest fails its
        schema, records that fail theirs (FILE:LINE), duplicate runs of one configuration and
        seed, and missing shards are named through `warn` and left out, never averaged in; the
        good runs are still read (a DataError only when no run is readable). How many were left
        out is in ``frame.attrs["skipped"]`` ({"runs": n, "records": m}), for printing beside
        the numbers. `rule_of` gives each run's pass@k rule (the public `cppo_bench.load_runs`
    passes its method's, cppo_bench.stats.read)."""
    import pandas as pd

    for what, fn in (("warn", warn), ("progress", progress)):  # a caller's mistake, one line
        if fn is not None and not callable(fn):
            raise DataError(f"load_runs: {what} must be a function, got {type(fn).__name__}")
    from cppo_bench.benchmarks.testsource import manifest_line
    from cppo_bench.plan.validity import record_tally
    from cppo_bench.store.index import one_per_slot, scan
    from cppo_bench.store.runs import MANIFEST

    store = scan(path)  # the path itself checked there: one DataError for None or bytes
    if not store.runs:
        if store.unreadable:  # nothing readable: the first reason is the error
            raise DataError(store.unreadable[0][1])
        raise DataError(f"{path}: no run directories (none holds a manifest.json)")
    runs, dropped = one_per_slot(store.runs)
    for line in [*store.warnings, *dropped]:
        if warn:
            warn(line)
    loaded, refused = [], []
    for run in runs:
        try:
            rule = rule_of(run.manifest, run.path / MANIFEST)
        except DataError as exc:  # options its method refuses: named, never counted
            refused.append(f"skipped run: {exc}")
            if warn:
                warn(refused[-1])
            continue
        loaded.append((run, run.manifest, rule, run.records()))
        for line in run.skipped:  # records that failed the schema: named, never counted
            if warn:
                warn(line)
        if progress:
            progress(1)
    if not loaded and refused:
        raise DataError(refused[0].removeprefix("skipped run: "))
    labels = _labels([(run, man) for run, man, _, _ in loaded], warn)
    rows: list[dict[str, Any]] = []
    for run, man, (estimator, select), records in loaded:
        tests = manifest_line(man)
        label = labels[str(run.path)]
        extra = man.extra
        if isinstance(extra.get("rejudged"), dict):  # `verify --run`: never pooled with its source
            label += "[rejudged]"
        for rec in records.values():
            outcomes = _bits(rec.outcomes)
            answers = tuple(b.answer for b in rec.branches)
            rows.append({
                "benchmark": man.bench, "method": man.method, "model": man.model,
                "trained": str(extra["trained"]) if extra.get("trained") else None,
                "base_model": extra.get("base_model"), "train_seed": extra.get("train_seed"),
                "seed": man.seed, "problem_id": rec.problem_id, "k": man.k,
                "estimator": estimator, "select": select,
                "outcomes": outcomes, "n_branches": len(outcomes),
                "n_passed": outcomes.count("1"), "planner_tokens": rec.planner_tokens,
                "solver_tokens": rec.solver_tokens, "method_label": label,
                "run_dir": str(run.path),
                "answers": answers if rec.label is not None else (),
                "answer_label": rec.label, "texts": tuple_texts(rec),
                "texts_kind": "plan" if rec.plans else "code", "validity": record_tally(rec),
                "dataset_size": man.dataset_size, "tests": tests, **_meta(rec.extra),
            })  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    frame.attrs["skipped"] = {
        "runs": len(store.unreadable) + len(refused),
        "records": sum(len(run.skipped) for run, _, _, _ in loaded),
    }
    return frame


# fields that place a trained checkpoint's run: they vary with the model, which labels it
_MODEL_TAGS = ("seed", "model", "served_model", "trained", "base_model", "train_seed", "rejudged")


def _labels(runs: list[tuple[Any, Any]], warn: Callable[[str], None] | None) -> dict[str, str]:
    """Each run's `method_label`: the method, with the model when a benchmark/method was run
    with several, and with the identity fields that tell its runs apart (max_tokens=128)
    when runs of one benchmark, method and model differ in more than their seed: such runs
    are separate rows, never pooled problem by problem (cppo_bench.store.identity)."""
    from cppo_bench.store.identity import identity_fields, label_part, varying
    from cppo_bench.store.runs import slug

    models: dict[tuple[str, str], set[str]] = defaultdict(set)
    groups: dict[tuple[str, str, str], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for run, man in runs:
        models[(man.bench, man.method)].add(man.model)
        groups[(man.bench, man.method, man.model)].append((str(run.path), identity_fields(man)))
    labels: dict[str, str] = {}
    for (bench, method, model), members in groups.items():
        keys = varying([f for _, f in members], skip=_MODEL_TAGS)
        if keys and warn:
            warn(
                f"{bench}/{method} ({model}): {len(members)} runs differ in "
                f"{', '.join(keys)}: shown as separate rows, never pooled"
            )
        taken: dict[tuple[str, Any, Any], list[str]] = defaultdict(list)
        for path, fields in members:
            parts = [slug(model)] if len(models[(bench, method)]) > 1 else []
            if keys:
                parts.append(label_part(fields, keys))
            labels[path] = f"{method}[{','.join(parts)}]" if parts else method
            taken[(labels[path], fields.get("seed"), fields.get("rejudged"))].append(path)
        for (label, seed, _rejudged), paths in taken.items():
            if len(paths) < 2:
                continue  # two runs one label and seed: an identity some lack; name the dirs
            if warn:
                warn(
                    f"{bench}/{label} seed {seed}: {len(paths)} runs whose identity cannot "
                    "be told apart (older manifests): shown as separate rows by directory"
                )
            for path in paths:
                labels[path] = f"{label}[{Path(path).name}]"
    return labels


def read_outcomes(path: str | Path) -> pd.DataFrame:
    """A per-problem outcome CSV (schema in cppo_bench/metrics/table.py) as a checked
    DataFrame: `outcomes` a 0/1 string or None, `passed` a bool or None, `seed` an int,
    token counts ints or None. A bad cell is one DataError naming FILE:LINE and the column."""
    import pandas as pd

    from cppo_bench.files import userfiles

    path = Path(path)
    try:  # the one reader: a FIFO or device is one line, the size checked before reading
        with userfiles.open_bytes(path) as fh:
            raw = pd.read_csv(fh, dtype=str, keep_default_na=False, encoding="utf-8")
    except DataError:  # the reader's own line, naming the file
        raise
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except pd.errors.EmptyDataError:
        raw = pd.DataFrame()
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: not a readable CSV ({first})") from None
    header = {str(c).strip() for c in raw.columns}
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = {"method", "problem_id"} - header
    if missing or not header & {"outcomes", "passed"}:
        need = sorted(missing) or ["outcomes or passed"]
        raise DataError(f"{path}: missing column(s) {', '.join(need)} in the header")
    raw = raw.fillna("")
    records: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, int, str], int] = {}
    raw_rows = raw.to_dict("records")
    for line, cells in enumerate(raw_rows, start=2):
        records.append(_checked(cells, f"{path}:{line}", line, seen))
    if not records:
        raise DataError(f"{path}: no data rows")
    frame = pd.DataFrame(records)
    for column in META_COLUMNS:  # what `stats --by` groups on, when the file has it
        if column in header:
            frame[column] = [str(c.get(column, "")).strip() or None for c in raw_rows]
    # where the rows came from, for a message about a column the file lacks
    frame.attrs["source"], frame.attrs["columns"] = str(path), list(raw.columns)
    frame.attrs["warnings"] = [] if "trained" in header else untagged_seeds(frame)
    return frame


def untagged_seeds(frame: pd.DataFrame) -> list[str]:
    """A CSV without the `trained` column marks no method trained: the study's rule
    (`cppo_bench.metrics.uncertainty`) reads a method's seeds as training seeds only when a
    checkpoint tag says so, as a run's manifest does. A method with several seeds is named,
    so a trained one can be tagged (one line each)."""
    n_seeds = frame.groupby(["benchmark", "method"])["seed"].nunique()
    return [
        f"{method} ({bench}): {n} seeds and no `trained` column: read as sampling seeds of an "
        "untrained method (bootstrap SE over problems); a trained checkpoint's rows need "
        "its tag in a `trained` column (std over training seeds)"
        for (bench, method), n in n_seeds.items()
        if n > 1
    ]


def _checked(
    cells: dict[str, str], where: str, line: int, seen: dict[tuple[str, str, int, str], int]
) -> dict[str, Any]:
    """One CSV row, typed and checked."""
    method = cells.get("method", "").strip()
    pid = cells.get("problem_id", "").strip()
    if not method or not pid:
        raise DataError(f"{where}: empty method or problem_id")
    text = "".join(cells.get("outcomes", "").replace("|", " ").split())
    if text and set(text) - {"0", "1"}:
        raise DataError(f"{where}: 'outcomes' must be a string of 0/1, got {quote(text)}")
    passed_text = cells.get("passed", "").strip().lower()
    if passed_text and passed_text not in _TRUE | _FALSE:
        raise DataError(f"{where}: 'passed' must be 0/1 or true/false, got {quote(passed_text)}")
    passed = (passed_text in _TRUE) if passed_text else None
    if not text and passed is None:
        raise DataError(f"{where}: neither 'outcomes' nor 'passed' is given")
    seed = _int(cells.get("seed"), where, "seed", 0) or 0  # never None: the default is 0
    estimator = cells.get("estimator", "").strip() or None
    if estimator is not None and estimator not in ESTIMATORS:
        raise DataError(
            f"{where}: 'estimator' must be one of {', '.join(ESTIMATORS)}, got {quote(estimator)}"
        )
    bench = cells.get("benchmark", "").strip() or "-"
    key = (bench, method, seed, pid)
    if key in seen:
        raise DataError(
            f"{where}: duplicate of line {seen[key]} ({bench}/{method}/seed {seed}/{pid})"
        )
    seen[key] = line
    return {
        "benchmark": bench, "method": method, "seed": seed, "problem_id": pid,
        "outcomes": text or None, "passed": passed,
        "planner_tokens": _int(cells.get("planner_tokens"), where, "planner_tokens", None),
        "solver_tokens": _int(cells.get("solver_tokens"), where, "solver_tokens", None),
        "trained": cells.get("trained", "").strip() or None, "estimator": estimator,
    }  # fmt: skip


def _int(text: str | None, where: str, column: str, default: int | None) -> int | None:
    if text is None or not text.strip():
        return default
    try:
        return int(text)
    except ValueError:
        raise DataError(f"{where}: {quote(column)} must be an integer, got {quote(text)}") from None


def check_frame(frame: Any) -> None:
    """One DataError when a statistic is handed something other than a results frame."""
    if not callable(getattr(frame, "to_dict", None)) or not hasattr(frame, "attrs"):
        raise DataError(
            f"results frame: expected a pandas DataFrame (cppo_bench.load_runs or a CSV read "
            f"by read_outcomes), got {type(frame).__name__}"
        )
