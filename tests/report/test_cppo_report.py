"""`cppo-bench report` on a CPPO pipeline folder: RM diagnostics figure (ROC against judge labels
and against solver outcomes, heat map), training curves, and the generated exposure audit."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.fixtures.cppo_stage_fixture import prepared, settings
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.report.cppo_runs import exposure_table, find_pipelines, pipeline_gate_log
from cppo_bench.report.run_index import RunIndex
from cppo_bench.store.runs import RunManifest, write_manifest
from trainers.cppo_pipeline import reward_model as rmod
from trainers.cppo_pipeline.exposure import write_exposure
from trainers.cppo_pipeline.pipeline import run_pipeline
from trainers.cppo_pipeline.pool import read_pool
from trainers.cppo_pipeline.stage_data import write_scores


def _eval_run(root: Path, ids: list[str]) -> None:
    write_manifest(
        root / "runs" / "demo-eval",
        RunManifest(
            method="direct",
            bench="demo",
            model="m",
            backend="hf",
            k=4,
            seed=0,
            sampling={},
            method_options={},
            data_source="demo",
            problem_ids=ids,
            problem_ids_hash="x",
            package_version="0",
            git_commit=None,
            created_at="now",
            status="complete",
        ),
        root=root,
    )


def test_report_from_a_pipeline_run(tmp_path: Path) -> None:
    from cppo_bench.report.build import build_report

    out, inputs = prepared(tmp_path / "runs" / "train")
    inputs.config = settings(joint={"phases": 1, "max_steps": 2, "refresh_problems": 2})
    rm, tau = rmod.load(out / "rm" / "reward_model")
    pool = read_pool(out / "rm" / "reward_model", {p.problem_id: p for p in inputs.problems})
    write_scores(
        out / "rm" / "val_scores.jsonl", rmod.probabilities(rm, pool), pool, tau, "heldout"
    )
    run_pipeline(out, inputs, ["joint"], echo=lambda s: None)
    demo = load_benchmark("demo").problems
    _eval_run(tmp_path, [p.problem_id for p in demo[:3]])
    pipelines = find_pipelines(tmp_path)
    assert [p.path for p in pipelines] == [out]
    log = pipeline_gate_log(pipelines[0])
    assert log is not None
    assert any(r.label is not None for r in log.records)  # judge labels -> ROC
    assert any(r.passed is not None for r in log.records)  # solver outcomes -> heat map
    result = build_report(tmp_path, tmp_path / "report", resamples=10)
    names = {f.name for f in result.figures}
    assert f"gate_cppo-{out.name}" in names and f"cppo_curves_{out.name}" in names
    html = (tmp_path / "report" / "index.html").read_text()
    assert "Per-component exposure audit" in html and "Joint CPPO rollout" in html
    md = (tmp_path / "report" / "tables" / f"exposure_audit_{out.name}.md").read_text()
    assert "Planner warm-up" not in md  # the fixture's warm-up wrote no exposure: not invented
    joint_row = next(line for line in md.splitlines() if line.startswith("| Joint CPPO rollout"))
    assert "| no |" in joint_row  # the fixture trains on no demo problem


def test_exposure_audit_shows_a_leak_as_a_failure(tmp_path: Path) -> None:
    demo = load_benchmark("demo").problems
    pipe = tmp_path / "train" / "cppo-x"
    for stage in ("sft", "joint"):
        (pipe / stage).mkdir(parents=True)
        (pipe / stage / "train_manifest.json").write_text(
            json.dumps({"kind": "training", "stage": stage})
        )
    write_exposure(pipe / "sft", [("Plan candidates (base policy)", "demo_train", demo[5:7], "")])
    write_exposure(pipe / "joint", [("Joint CPPO rollout", "demo_train", demo[:2], "")])
    _eval_run(tmp_path, [p.problem_id for p in demo[:3]])
    table = exposure_table(find_pipelines(tmp_path)[0], RunIndex(tmp_path))
    seen = {r.labels[0]: r.labels[2] for r in table.rows}
    assert seen["Plan candidates (base policy)"] == "no"
    assert seen["Joint CPPO rollout"] == "YES (leak)"
    assert seen["Final evaluation (demo)"] == "N/A"
    assert any(n.startswith("FAILURE") and demo[0].problem_id in n for n in table.notes)
    counts = {r.labels[0]: r.cells[1].value for r in table.rows}
    assert counts["Joint CPPO rollout"] == 2 and counts["Plan candidates (base policy)"] == 0
