"""Issue #15: the report's metrics, tables and figures follow the study's definitions."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from cppo_bench.report.measures import METRICS


def _ctx(records):
    return SimpleNamespace(records=records, notes=[])


def test_dup_rate_counts_duplicate_plan_tuples_once():
    two_repeats = {"k": 4, "count": 4, "n_duplicates": 2, "duplicates": [[0, 1], [0, 2]]}
    clean = {"k": 4, "count": 4, "n_duplicates": 0, "duplicates": []}
    legacy = {"k": 4, "duplicates": [[1, 3]]}  # older report without n_duplicates
    recs = [
        SimpleNamespace(plan_validity=[two_repeats, clean]),
        SimpleNamespace(plan_validity=[legacy]),
        SimpleNamespace(plan_validity=[]),
    ]
    values = METRICS.get("dup_rate").problem(_ctx(recs))
    # a tuple with any repeated method counts once: 1 of 2 tuples, 1 of 1; the share of
    # repeated plans (the earlier rule) would give 2/8 and 1/4
    assert values[:2] == pytest.approx([0.5, 1.0]) and np.isnan(values[2])


def test_inference_only_spread_is_the_bootstrap_standard_error():
    from cppo_bench.metrics import mean_std

    outcomes = np.array([1.0] * 103 + [0.0] * 97)  # pass@4 0.515 on 200 problems
    ms = mean_std(outcomes, trained=False)
    assert ms.mean == pytest.approx(0.515) and ms.kind == "bootstrap_se"
    # the standard error of a mean of 200 0/1 outcomes, not their std (0.50)
    assert ms.std == pytest.approx(np.sqrt(0.515 * 0.485 / 200), abs=0.004)
    assert mean_std(outcomes, trained=False, inference_spread="std").std == pytest.approx(
        outcomes.std(ddof=1)
    )
    assert mean_std(outcomes, trained=False).std == ms.std  # seeded: reproducible


# --- item 8: the shipped specs carry the study's rows, columns and axes --------------------


def _specs():
    from cppo_bench.report.specs import load_specs

    return {s.name: s for s in load_specs()}


def _rows(spec):
    return {(r.method, r.trained, r.options.get("inference")) for r in spec.rows}


def test_specs_have_the_studys_rows_and_axes():
    specs = _specs()
    div = specs["plan_diversity"]
    assert {("direct", "pkpo", None), ("direct", "passk_rl", None)} <= _rows(div)
    assert div.figures[0]["kind"] == "diversity_gain" and div.figures[0]["x"] == "d_alg"
    assert ("skills", "upskill", None) in _rows(specs["tokens"])
    maj = specs["maj4"]
    assert ("fixed_strategy", None, None) in _rows(maj) and maj.columns.average
    mode = specs["inference_mode"]
    assert {("cppo", "planner_sft", "joint"), ("cppo", "planner_sft", "iid")} <= _rows(mode)
    assert "d_alg" in {m.metric for m in mode.columns.metrics}
    (comp,) = specs["seed_significance"].comparisons
    assert comp.b is None and {("direct", "pkpo", None), ("direct", None, None)} <= {
        (r.method, r.trained, r.options.get("inference")) for r in comp.strongest
    }
    baselines = {(r.method, r.trained) for r in specs["main_pass4"].rows}
    assert baselines <= {(r.method, r.trained) for r in specs["k_sweep"].rows}
    assert [r.label for r in specs["pipeline_ablation"].rows] == [
        "Direct Solve",
        "Tuple Planner SFT",
        "Tuple Planner SFT + RM warm-up",
        "CPPO",
    ]
    order = specs["order_control"]
    assert {r.select for r in order.rows} == {"first", "last", "random"} and order.derive_k


# --- items 8-10: the new table pieces on a planted store -----------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from dataclasses import replace

    from report_plant import _write, plant

    root = tmp_path_factory.mktemp("fidelity") / "runs"
    plants = plant(root)
    # the second answer-prediction task, so rows have both tasks of the maj@4 Avg.
    for p in [p for p in plants if p.bench == "lcb_execution"]:
        _write(root, replace(p, bench="lcb_output_prediction", outcomes=p.outcomes[::-1]))
    return root, plants


def _engine(root, **options):
    from cppo_bench.report.cells import CellEngine
    from cppo_bench.report.run_index import RunIndex

    return CellEngine(RunIndex(root), resamples=200, **options)


def _build(root, name, override=None, **options):
    from cppo_bench.report.specs import parse_spec
    from cppo_bench.report.tables import build_table

    spec = parse_spec(name, override) if override is not None else _specs()[name]
    return build_table(spec, _engine(root, **options))


def test_strongest_baseline_is_picked_per_cell(store):
    from cppo_bench.report.specs import parse_selector
    from cppo_bench.report.tables import strongest_baseline

    root, _ = store
    spec = _specs()["seed_significance"]
    engine = _engine(root)
    for model in ("org/ModelA", "org/ModelB"):
        best = strongest_baseline(spec, engine, spec.comparisons[0].strongest, model, "apps")
        means = {
            s.label: engine.cell(spec, s, model, "apps", spec.metric).value
            for s in spec.comparisons[0].strongest
        }
        have = {k: v for k, v in means.items() if v is not None}
        assert best.label == max(have, key=have.get)
    none = parse_selector("x", "r", {"label": "Nothing", "method": "nope"})
    assert strongest_baseline(spec, engine, (none,), "org/ModelA", "apps") is none


def test_average_column_of_inference_rows(store):
    root, _ = store
    spec = _specs()["maj4"]
    table = _build(root, "maj4")
    heads = [c.header for c in table.columns]
    assert any(h[1] == "Avg." for h in heads)
    checked = 0
    for sel, row in zip(spec.rows, table.rows, strict=True):
        by = dict(zip(heads, row.cells, strict=True))
        for model in {h[0] for h in heads}:
            avg = by[(model, "Avg.", "maj@4")]
            parts = [by[(model, b, "maj@4")] for b in ("LCB execution", "LCB output pred.")]
            if any(p.value is None for p in parts):
                assert avg.value is None and avg.notes  # an average needs both tasks
            elif not sel.is_trained:  # mean of the task means, combined s.e.
                assert avg.value == pytest.approx(np.mean([p.value for p in parts]))
                assert avg.spread == pytest.approx(np.hypot(*[p.spread for p in parts]) / 2)
                checked += 1
    assert checked
    assert table.rows[2].labels[0] == "Fixed-Strategy Ensemble"


def test_external_cells_are_rows_of_their_own_outside_significance(tmp_path):
    from pathlib import Path

    import yaml

    import cppo_bench

    root = tmp_path / "runs"
    root.mkdir()
    shipped = Path(cppo_bench.__file__).parent / "report" / "specs" / "gemma.yaml"
    spec = yaml.safe_load(shipped.read_text())
    spec["external"] = [{"row": "Direct Solve", "model": "google/gemma-4-E2B", "bench": "lcb",
                         "value": 0.44, "spread": None, "source": "a model card"}]  # fmt: skip
    table = _build(root, "gemma", spec, study_numbers=True)  # `report --study-numbers`
    cells = {(r.labels[0], c.header[0], c.header[1]): cell
             for r in table.rows for c, cell in zip(table.columns, r.cells, strict=True)}  # fmt: skip
    ext = cells[("Direct Solve (published: a model card)", "Gemma 4 E2B", "LCB")]
    assert ext.value == pytest.approx(0.44) and ext.spread is None and ext.request is None
    assert "left out of significance tests" in ext.notes[0] and not ext.mark
    own = cells[("Direct Solve", "Gemma 4 E2B", "LCB")]
    assert own.value is None and own.request is not None  # the user's row still asks for a run
    # by default a report shows one's own runs only: no published row
    plain = _build(root, "gemma", spec)
    assert all("published" not in r.labels[0] for r in plain.rows)


def test_classifier_reliability_table(tmp_path):
    from cppo_bench.diversity.reliability import judge_reliability

    root = tmp_path / "runs"
    (root / "judge_reliability").mkdir(parents=True)
    items = [("dp", "dp", "dp"), ("greedy", "greedy", "greedy"), ("graph", "dp", "dp"),
             ("dp", "greedy", "dp"), ("graph", "graph", "graph")]  # fmt: skip
    lines = [json.dumps({"judge": j, "annotator_a": a, "annotator_b": b}) for j, a, b in items]
    (root / "judge_reliability" / "qwen9b.jsonl").write_text("\n".join(lines))
    table = _build(root, "diversity_classifier")
    want = judge_reliability(*zip(*items, strict=True))
    got = {r.labels[0]: r.cells[0] for r in table.rows}
    assert got["Cohen's κ (inter-annotator)"].value == pytest.approx(want.kappa)
    assert got["Classifier accuracy"].value == pytest.approx(want.accuracy)
    assert got["Classifier macro-F1"].value == pytest.approx(want.macro_f1)
    (tmp_path / "bare").mkdir()
    empty = _build(tmp_path / "bare", "diversity_classifier")
    assert (
        empty.rows[0].cells[0].value is None
        and "judge_reliability" in empty.rows[0].cells[0].notes[0]
    )


EXAMPLES = {
    "name": "ex",
    "title": "Examples",
    "kind": "examples",
    "metric": {"metric": "pass", "k": 4},
    "problems": [{"bench": "apps", "problem_id": "q3"}, {"bench": "apps", "problem_id": "nope"}],
    "rows": [
        {"label": "Direct Solve", "method": "direct"},
        {"label": "CPPO inference", "method": "cppo", "options": {"inference": "joint"}},
        {"label": "Nobody", "method": "plansearch"},
    ],
}


def test_examples_show_each_methods_attempts_side_by_side(store):
    from cppo_bench.report.extra_tables import summarize_program
    from cppo_bench.store.runs import read_records

    root, _ = store
    table = _build(root, "ex", EXAMPLES)
    heads = [c.header for c in table.columns]
    assert heads[:4] == [
        ("Direct Solve", f) for f in ("plan", "program", "verdict", "D_alg category")
    ]
    engine = _engine(root)
    sel = parse_rows(EXAMPLES)[1]
    run = engine.index.select(sel, "org/ModelA", "apps", 4).by_seed[0]
    rec = read_records(run.path)["q3"]
    rows = [r for r in table.rows if r.labels[:2] == ("APPS q3", "ModelA")]
    assert len(rows) == 4  # one row per attempt
    for i, row in enumerate(rows):
        by = dict(zip(heads, row.cells, strict=True))
        b = rec.branches[i]
        assert by[("CPPO inference", "verdict")].text == f"{'✓' if b.passed else '✗'} {b.verdict}"
        assert by[("CPPO inference", "plan")].text == " ".join((b.plan or "—").split())
        assert by[("CPPO inference", "program")].text == summarize_program(b.code)
        assert by[("Nobody", "plan")].request is not None  # no run: --check asks for one
    missing = [r for r in table.rows if r.labels[0] == "APPS nope"][0]
    assert "not in this run" in missing.cells[0].notes[0]
    assert (
        summarize_program("import heapq\nfor x in a:\n    heapq.heappush(h, x)\n")
        == "3 lines: heap, loops"
    )
    assert (
        summarize_program("# binary search on the answer\nprint(1)")
        == "binary search on the answer"
    )


def parse_rows(spec):
    from cppo_bench.report.specs import parse_selector

    return [parse_selector("ex", f"rows[{i}]", r) for i, r in enumerate(spec["rows"])]


def test_check_on_an_empty_store_lists_every_study_table_and_figure(tmp_path):
    from click.testing import CliRunner

    from cppo_bench.cli import main
    from cppo_bench.report.catalogue import STATIC

    root = tmp_path / "runs"
    root.mkdir()
    out = CliRunner().invoke(main, ["report", "--runs", str(root), "--check"]).output
    for spec in _specs().values():
        assert f'"{spec.study[0]}" [{spec.name}]' in out, spec.name
        for fig in spec.figures:
            assert f'Figure "{fig["study"]}"' in out
    for _, name, _ in STATIC:
        assert name in out
    block = out.split("[main_pass4]")[1].split("\n")
    assert block[2].strip().startswith("fill: cppo-bench run --method direct --bench apps")
    assert "fill: write runs/judge_reliability" in out
