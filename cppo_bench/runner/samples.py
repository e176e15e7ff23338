"""What a model did, per problem, read back from a stored run (`cppo-bench samples`,
`cppo_bench.api.samples`): the problem's statement, the plans, each attempt's program, verdict
and the first test it failed, as lm-eval's ``--log_samples`` and evalplus's sample files
give them.

A run stores completions, verdicts and the index of the first failing test, not the tests
themselves: the statement and the failing test's input / expected output are read from the
benchmark (``data``, else the file the run was made from when it is still there). Without
it the samples still show everything the run holds, and say the tests were not at hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.store.runs import MANIFEST, ProblemRecord, read_manifest, read_records, store_path
from cppo_bench.util.termsafe import quote

TEST_CHARS = 2000  # of a failing test's input / expected output shown


def _clip(text: Any, limit: int = TEST_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


def _benchmark(manifest: Any, data: str | Path | None, options: dict[str, Any]) -> Any:
    from cppo_bench.benchmarks.load import load_result
    from cppo_bench.runner.rundata import reload_args

    data, options, _ = reload_args(manifest, data, options)  # the run's data, from anywhere
    if data is None:
        return None  # never reach for the hub to show samples
    return load_result(manifest.bench, data, unique=False, **options)


def _prompt(manifest: Any, problem: Problem | None) -> tuple[Any, str]:
    """The prompt as the model read it where one prompt serves every attempt (direct: its
    chat messages, re-rendered from the run's prompt version), else the statement."""
    if problem is None:
        return None, "none"
    if manifest.method == "direct":
        from cppo_bench.methods.direct import render_messages
        from cppo_bench.prompts import DEFAULT_VERSION

        version = str(manifest.method_options.get("prompt_version") or DEFAULT_VERSION)
        try:
            messages = render_messages(problem, version)
        except Exception:  # noqa: BLE001 - a version this install lacks: show the statement
            return problem.statement, "statement"
        return [dict(m) for m in messages], "messages"
    return problem.statement, "statement"


def _test(problem: Problem | None, index: int | None) -> dict[str, Any] | None:
    if problem is None or index is None or not 0 <= index < len(problem.tests):
        return None
    t = problem.tests[index]
    return {"index": index, "input": _clip(t.input), "expected": _clip(t.output)}


def sample_rows(
    run: str | Path,
    problem: str | None = None,
    *,
    data: str | Path | None = None,
    loader_options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One dict per problem of the run in `run` (or only `problem`), in the run's order:
    ``problem_id``, ``passed``, ``prompt`` (direct: the chat messages as sent; other methods,
    whose prompts differ per stage and attempt: the statement; None when the data is not at
    hand) and ``prompt_kind``,
    ``plans``, ``stages`` (planning methods: each stage's prompt as sent and the raw texts
    received, cppo_bench.runner.sample_stages), and ``attempts`` (index, plan,
    plan_filled, solver_prompt (the messages sent), code, completion, verdict, passed,
    tests_passed, tests_total, first_failed, ``first_failing_test`` {input, expected} or
    None, detail, finish_reason, tokens, seed)."""
    run_dir = store_path(run, "run directory")
    if problem is not None and not isinstance(problem, str):
        raise DataError(
            f"samples: problem must be a problem id (text), got {type(problem).__name__}"
        )
    manifest = read_manifest(run_dir)
    from cppo_bench.methods.stored import check_options

    check_options(manifest, run_dir / MANIFEST)  # the stage views read them
    records: dict[str, ProblemRecord] = read_records(run_dir)
    order = [pid for pid in manifest.problem_ids if pid in records]
    if problem is not None:
        if problem not in records:
            raise DataError(
                f"{run_dir}: no problem {quote(problem)} in this run ({len(records)} problems; "
                "list them with `cppo-bench samples --run DIR`)"
            )
        order = [problem]
    loaded = _benchmark(manifest, data, dict(loader_options or {}))
    by_id = {p.problem_id: p for p in loaded.problems} if loaded is not None else {}
    from cppo_bench.runner.sample_stages import stage_view

    rows = []
    for pid in order:
        rec, p = records[pid], by_id.get(pid)
        prompt, kind = _prompt(manifest, p)
        stages, solver_prompts, filled = stage_view(manifest, p, rec)
        attempts = [
            {
                "index": b.index,
                "plan": b.plan,
                "plan_filled": filled[i],  # a filled (generic or repeated) plan, not the model's
                "solver_prompt": solver_prompts[i],  # the messages this branch's solver was sent
                "code": b.code,
                "completion": b.completion,
                "verdict": b.verdict,
                "passed": b.passed,
                "tests_passed": b.tests_passed,
                "tests_total": b.tests_total,
                "first_failed": b.first_failed,
                "first_failing_test": None if b.passed else _test(p, b.first_failed),
                "detail": b.detail,
                "finish_reason": b.finish_reason,
                "tokens": b.solver_tokens,
                "seed": b.seed,
            }
            for i, b in enumerate(rec.branches)
        ]
        rows.append(
            {
                "run": str(run_dir),
                "bench": manifest.bench,
                "method": manifest.method,
                "model": manifest.model,
                "seed": manifest.seed,
                "problem_id": pid,
                "passed": rec.passed,
                "prompt": prompt,
                "prompt_kind": kind,  # messages (as sent) | statement | none
                "plans": rec.plans,
                "stages": stages,  # per planning stage: the prompt sent, the raw texts received
                "attempts": attempts,
                "tests_at_hand": p is not None,
            }
        )
    return rows
