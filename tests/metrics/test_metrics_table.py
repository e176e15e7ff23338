"""Per-problem results from a CSV file and from a run store (read on the caller's side,
cppo_bench.stats.read: the metrics read no file), and their pass@k scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cppo_bench.errors import DataError
from cppo_bench.metrics.table import group_scores, method_matrices, row_scores
from cppo_bench.stats.read import load_runs, rows_of
from cppo_bench.store.frames import read_outcomes
from cppo_bench.store.runs import (
    Branch,
    ProblemRecord,
    RunManifest,
    append_record,
    run_dir_for,
    write_manifest,
)


def csv_rows(path: Path):  # what `cppo-bench stats --csv` scores
    return rows_of(read_outcomes(path))


def run_rows(root: Path):  # what `cppo-bench stats --runs` scores
    return rows_of(load_runs(root))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.csv"
    path.write_text(text)
    return path


def test_csv_outcomes_and_passed_forms(tmp_path):
    path = write(
        tmp_path,
        "benchmark,method,seed,problem_id,outcomes,passed,planner_tokens,solver_tokens\n"
        "apps,cppo,0,p1,0010,,120,900\n"
        "apps,cppo,0,p2,0000,,100,800\n"
        "apps,direct,,p1,,1,,\n"
        "apps,direct,,p2,,false,,\n"
        "apps,pkpo,1,p1,1|0|0|1,,,\n",
    )
    rows = csv_rows(path)
    assert [r.outcomes for r in rows[:2]] == [(False, False, True, False), (False,) * 4]
    assert rows[2].seed == 0 and rows[2].passed is True and rows[3].passed is False
    assert rows[0].planner_tokens == 120 and rows[2].solver_tokens is None
    assert rows[4].outcomes == (True, False, False, True) and rows[4].seed == 1
    rows = rows[:4]
    assert row_scores(rows, 2).tolist() == [0.0, 0.0, 1.0, 0.0]
    assert row_scores(rows, 4).tolist() == [1.0, 0.0, 1.0, 0.0]  # `passed` rows: any k
    assert row_scores(rows, 2, select="last").tolist() == [1.0, 0.0, 1.0, 0.0]
    assert row_scores(rows, 2, estimator="unbiased")[0] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("method,problem_id\ncppo,p1\n", "outcomes or passed"),
        ("method,outcomes\ncppo,01\n", "problem_id"),
        ("method,problem_id,outcomes\ncppo,p1,01x\n", ":2: 'outcomes' must be a string of 0/1"),
        ("method,problem_id,passed\ncppo,p1,maybe\n", ":2: 'passed' must be"),
        ("method,problem_id,passed,seed\ncppo,p1,1,one\n", ":2: 'seed' must be an integer"),
        ("method,problem_id,passed\ncppo,p1,1\ncppo,p1,0\n", ":3: duplicate of line 2"),
        ("method,problem_id,outcomes,passed\ncppo,p1,,\n", "neither"),
        ("method,problem_id,passed\n", "no data rows"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, text, message):
    with pytest.raises(DataError, match=message) as info:
        csv_rows(write(tmp_path, text))
    assert "results.csv" in str(info.value)


def test_too_few_branches_names_the_record(tmp_path):
    rows = csv_rows(write(tmp_path, "method,problem_id,outcomes\ncppo,p9,0101\n"))
    with pytest.raises(DataError, match="cppo/seed 0/p9: 4 branches; pass@5"):
        row_scores(rows, 5)


def test_method_matrices_pair_problems(tmp_path):
    rows = csv_rows(
        write(
            tmp_path,
            "method,seed,problem_id,passed\n"
            "a,0,p1,1\na,0,p2,0\na,1,p1,1\na,1,p2,1\na,1,p3,1\nb,0,p1,0\nb,0,p2,1\nb,0,p3,0\n",
        )
    )
    nested = group_scores(rows, row_scores(rows, 1))
    arrays, shared, dropped = method_matrices(nested["-"], ["a", "b"])
    assert shared == ["p1", "p2"] and dropped == 1  # p3 lacks a seed-0 result for a
    assert arrays["a"].tolist() == [[1.0, 0.0], [1.0, 1.0]]
    assert arrays["b"].tolist() == [[0.0, 1.0]]
    with pytest.raises(DataError, match="no results for method"):
        method_matrices(nested["-"], ["a", "zzz"])


def make_run(root: Path, method: str, seed: int, outcomes: dict[str, list[bool]], **kw) -> Path:
    manifest = RunManifest(
        method=method, bench="demo", model=kw.get("model", "smollm2"), backend="hf", k=4,
        seed=seed, sampling={}, method_options=kw.get("options", {}), data_source="demo",
        problem_ids=sorted(outcomes), problem_ids_hash="h", package_version="0.1.0",
        git_commit=None, created_at="2025-01-01T00:00:00",
    )  # fmt: skip
    run = run_dir_for(root, manifest)
    write_manifest(run, manifest, root=root)
    for pid, outs in outcomes.items():
        branches = [
            Branch(
                index=i, code=f"print({i})", completion="", verdict="AC" if ok else "WA", passed=ok
            )
            for i, ok in enumerate(outs)
        ]
        append_record(
            run,
            root=root,
            record=ProblemRecord(
                pid, branches, planner_tokens=50, solver_tokens=400, plans=kw.get("plans", [])
            ),
        )
    return run


def test_run_rows(tmp_path):
    make_run(tmp_path, "cppo", 0, {"a": [False, True, False, False]}, options={"select": "last"},
             plans=[["use dp", "use greedy", "bfs", "brute force"]])  # fmt: skip
    make_run(tmp_path, "direct", 0, {"a": [True, False, False, False]}, model="m1")
    make_run(tmp_path, "direct", 0, {"a": [False, False, False, False]}, model="m2")
    rows = sorted(run_rows(tmp_path), key=lambda r: r.method)
    assert [r.method for r in rows] == ["cppo", "direct[m1]", "direct[m2]"]
    cppo = rows[0]
    assert cppo.select == "last" and cppo.texts_kind == "plan"
    assert cppo.texts == (("use dp", "use greedy", "bfs", "brute force"),)
    assert rows[1].texts_kind == "code" and rows[1].texts == (
        ("print(0)", "print(1)", "print(2)", "print(3)"),
    )
    assert (cppo.planner_tokens, cppo.solver_tokens) == (50, 400)
    # cppo's own select=last: branches 3-4 count for k=2, so the pass in branch 2 does not;
    # direct's samples are exchangeable: unbiased 1 - C(3,2)/C(4,2) = 0.5 for 1 pass in 4
    assert (cppo.estimator, rows[1].estimator) == ("first", "unbiased")
    assert np.array_equal(row_scores(rows, 2), [0.0, 0.5, 0.0])
    assert np.array_equal(row_scores(rows, 2, estimator="first"), [0.0, 1.0, 0.0])
    assert np.array_equal(row_scores(rows, 2, select="first"), [1.0, 0.5, 0.0])
    with pytest.raises(DataError, match="no run directories"):
        run_rows(tmp_path / "empty")
