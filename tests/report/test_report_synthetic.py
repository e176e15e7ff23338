"""`cppo-bench report` on a synthetic run store with planted per-problem outcomes.

Every cell of every shipped table (read back from the CSV the command writes) and every
dagger is checked against values computed here, directly from the planted outcomes with
plain Python / numpy / scipy: the test never calls the report's own computations.
"""

from __future__ import annotations

import csv
import math
import random
from collections import Counter
from importlib import resources

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from report_plant import DEFAULTS, LABEL, MODELS, N, Plant, plant
from scipy import stats

from cppo_bench.cli import main


# ----------------------------------------------------------------- independent expectations
def matching(plants, row, model, bench):
    return [
        p
        for p in plants
        if p.method == row["method"]
        and p.trained == row.get("trained")
        and p.model == model
        and p.bench == bench
        and all(p.options.get(k, DEFAULTS.get(k)) == v for k, v in row.get("options", {}).items())
    ]


def pick_runs(plants, row, model, bench, k, derive):
    pool = matching(plants, row, model, bench)
    ks = sorted({p.k for p in pool})
    use = k if k in ks else (min([x for x in ks if x > k], default=None) if derive else None)
    return {p.seed: p for p in pool if p.k == use}


def majority(answers):
    counts = Counter(answers)
    best = max(counts.values())
    return next(a for a in answers if counts[a] == best)


def problem_values(p: Plant, metric: str, k: int, estimator: str) -> list[float | None]:
    if metric == "pass":
        if p.k == k or estimator == "first":
            return [float(any(o[:k])) for o in p.outcomes]
        return [1 - math.comb(p.k - sum(o), k) / math.comb(p.k, k) for o in p.outcomes]
    if metric == "maj":
        return [
            float(majority(a[:k]) == LABEL) if p.answers else None for a in (p.answers or [[]] * N)
        ]
    if metric in ("planner_tokens", "solver_tokens", "tokens"):
        pl, so = np.array(p.planner, float), np.array(p.solver, float)
        return list({"planner_tokens": pl, "solver_tokens": so, "tokens": pl + so}[metric])
    if metric == "dup_rate":
        return [float(d > 0) for d in p.dups] if p.dups else [None] * N  # tuples
    if metric == "d_surf":
        return [p.diversity] * N
    return [None] * N  # d_sem / d_alg: no encoder or judge in this test


def aggregate(per_seed: dict[int, list], trained: bool):
    idx = [i for i in range(N) if all(v[i] is not None for v in per_seed.values())]
    if not idx:
        return None
    mat = np.array([[per_seed[s][i] for i in idx] for s in sorted(per_seed)], dtype=float)
    vals = mat.mean(axis=1) if trained else mat.mean(axis=0)
    # what the bootstrap resamples: seeds x problems, or the seed-averaged row (inference)
    boot = mat if trained else mat.mean(axis=0, keepdims=True)
    if vals.size < 2:
        return float(vals.mean()), None, boot
    if trained:
        return float(vals.mean()), float(vals.std(ddof=1)), boot
    # inference-only: bootstrap s.e. of the mean over problems (report seed 0, 1000 draws)
    # the report orders problems by id ("q0", "q1", "q10", ...) before resampling
    ordered = vals[sorted(range(len(idx)), key=lambda i: f"q{idx[i]}")]
    picks = np.random.default_rng(0).integers(0, vals.size, size=(1000, vals.size))
    return float(vals.mean()), float(ordered[picks].mean(axis=1).std(ddof=1)), boot


def expected_cell(plants, row, model, bench, metric, k, estimator, derive):
    runs = pick_runs(plants, row, model, bench, k, derive and metric in ("pass", "maj"))
    if not runs:
        return None
    trained = row.get("trained") is not None
    if metric == "pass_per_10k":
        ratios = []
        for s in sorted(runs):
            p = runs[s]
            tokens = np.mean(np.array(p.planner) + np.array(p.solver))
            ratios.append(np.mean(problem_values(p, "pass", k, "first")) / (tokens / 1e4))
        if trained and len(ratios) >= 2:
            return float(np.mean(ratios)), float(np.std(ratios, ddof=1)), None
        return float(np.mean(ratios)), None, None
    est = estimator or row.get("estimator", "first")
    return aggregate({s: problem_values(p, metric, k, est) for s, p in runs.items()}, trained)


def bootstrap_p(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 5) -> float:
    """Plain-loop hierarchical bootstrap: problems, then one seed per method per resample."""
    rnd = random.Random(seed)
    n = a.shape[1]
    worse = 0
    for _ in range(resamples):
        idx = [rnd.randrange(n) for _ in range(n)]
        sa, sb = rnd.randrange(a.shape[0]), rnd.randrange(b.shape[0])
        worse += sum(a[sa, i] for i in idx) <= sum(b[sb, i] for i in idx)
    return (1 + worse) / (1 + resamples)


# ----------------------------------------------------------------------------- fixtures
def shipped_specs() -> dict[str, dict]:
    folder = resources.files("cppo_bench.report") / "specs"
    return {
        f.name[:-5]: yaml.safe_load(f.read_text())
        for f in folder.iterdir()
        if f.name.endswith(".yaml")
    }


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    plants = plant(root / "runs")
    result = CliRunner().invoke(
        main,
        ["report", "--runs", str(root / "runs"), "--out", str(root / "out"), "--resamples", "1000"],
    )
    assert result.exit_code == 0, result.output
    tables = {}
    for name in shipped_specs():
        with open(root / "out" / "tables" / f"{name}.csv", newline="") as fh:
            tables[name] = list(csv.DictReader(fh))
    return plants, tables, root


def _num(text: str) -> float | None:
    return float(text) if text else None


def _models_and_benches(plants, spec):
    cols = spec.get("columns", {})
    benches = list(cols.get("benches", []))
    if cols.get("other_benches"):
        benches += sorted({p.bench for p in plants} - set(benches))
    models = sorted({p.model for p in plants if p.bench in benches})
    return models, benches


def test_every_grid_cell_matches_the_planted_outcomes(report):
    plants, tables, _ = report
    checked = 0
    for name, spec in shipped_specs().items():
        if spec.get("kind", "grid") != "grid" or spec["columns"].get("models", "auto") != "auto":
            continue  # explicit models (gemma): no planted runs; checked in test_report_fidelity
        rows = {r["label"]: r for r in spec["rows"]}
        models, benches = _models_and_benches(plants, spec)
        n_metrics = len(spec["columns"]["metrics"])
        n_benches = len(benches) + bool(spec["columns"].get("average"))
        assert len(tables[name]) == len(rows) * len(models) * n_benches * n_metrics, name
        for line in tables[name]:
            row = rows[line["row_method"]]
            if line["bench"] == "avg" or row.get("select", "first") != "first":
                continue  # Avg. columns and last/random-K rows: test_report_fidelity
            metric = next(
                m
                for m in spec["columns"]["metrics"]
                if (m["metric"], str(m.get("k", 4))) == (line["metric"], line["k"])
                and (m.get("label") is None or line["column"].endswith(m["label"]))
            )
            want = expected_cell(
                plants,
                row,
                line["model"],
                line["bench"],
                metric["metric"],
                int(line["k"]),
                metric.get("estimator"),
                metric.get("derive", spec.get("derive_k", False)),
            )
            where = f"{name}: {line['row_method']} / {line['column']} ({line['model']})"
            if want is None:
                assert line["value"] == "", where  # empty, never a zero
                assert line["notes"], f"{where}: an empty cell needs its footnote"
            else:
                assert _num(line["value"]) == pytest.approx(want[0], abs=1e-9), where
                if want[1] is None:
                    assert line["spread"] == "", where
                else:
                    assert _num(line["spread"]) == pytest.approx(want[1], abs=1e-9), where
            checked += 1
    assert checked > 500


def test_missing_runs_and_unavailable_measures_are_footnoted(report):
    plants, tables, _ = report
    main_rows = {(r["row_method"], r["model"], r["bench"]): r for r in tables["main_pass4"]}
    upskill = main_rows[("UpSkill", MODELS[0], "apps")]
    assert upskill["value"] == "" and "no stored run" in upskill["notes"]
    sem = [r for r in tables["plan_diversity"] if r["metric"] == "d_sem"]
    assert all(r["value"] == "" for r in sem)
    with_runs = [r for r in sem if "no stored run" not in r["notes"]]
    assert with_runs and all("D_sem not computed" in r["notes"] for r in with_runs)
    derived = [r for r in tables["k_sweep"] if r["k"] in ("1", "2") and r["value"]]
    assert derived and all("read off k=4 runs" in r["notes"] for r in derived)
    pooled = [r for r in tables["k_sweep"] if r["k"] == "8" and r["value"]]
    assert pooled and all("read off k=16 runs (unbiased" in r["notes"] for r in pooled)


def test_daggers_match_an_independent_bootstrap(report):
    plants, tables, _ = report
    marked = 0
    for name, spec in shipped_specs().items():
        sig = spec.get("significance")
        if not sig or spec["columns"].get("models", "auto") != "auto":
            continue
        metrics = sig.get("metrics", ["pass", "maj"])
        models, benches = _models_and_benches(plants, spec)
        for model in models:
            for bench in benches:
                for m in spec["columns"]["metrics"]:
                    if m["metric"] not in metrics:
                        continue
                    got = {}
                    for row in spec["rows"]:
                        cell = expected_cell(
                            plants, row, model, bench, m["metric"], m.get("k", 4), None, False
                        )
                        if cell is not None:
                            got[row["label"]] = (row.get("group") == sig["candidates"], cell[2])
                    cands = [r for r, (c, _) in got.items() if c]
                    bases = [r for r, (c, _) in got.items() if not c]
                    lines = {
                        ln["row_method"]: ln
                        for ln in tables[name]
                        if (ln["model"], ln["bench"], ln["metric"]) == (model, bench, m["metric"])
                    }
                    if not cands or not bases:
                        assert all(ln["mark"] == "" for ln in lines.values())
                        continue
                    best = max(bases, key=lambda r: got[r][1].mean())
                    for cand in cands:
                        p = bootstrap_p(got[cand][1], got[best][1])
                        assert p < 0.01 or p > 0.2, f"{name} {cand} vs {best} {model}/{bench}: {p}"
                        where = f"{name}: {cand} vs {best} on {model}/{bench}"
                        assert (lines[cand]["mark"] == "†") == (p < 0.05), where
                        assert (_num(lines[cand]["p_value"]) < 0.05) == (p < 0.05), where
                        marked += lines[cand]["mark"] == "†"
    # planted: A/apps trained CPPO, B/apps untrained CPPO, A/lcb_execution untrained CPPO
    # (pass@4 in the main table and maj@4 in the maj table)
    assert marked >= 4


def strongest(plants, pool, model, bench):
    """The baseline with the highest cell mean (ties: the first), else the first."""
    scored = [(expected_cell(plants, r, model, bench, "pass", 4, None, False), -i, r)
              for i, r in enumerate(pool)]  # fmt: skip
    have = [(c[0], i, r) for c, i, r in scored if c is not None]
    return max(have, key=lambda t: (t[0], t[1]))[2] if have else pool[0]


def test_seed_deltas_and_t_intervals(report):
    plants, tables, _ = report
    spec = shipped_specs()["seed_significance"]
    models, benches = _models_and_benches(plants, spec)
    lines = tables["seed_significance"]
    assert len(lines) == len(spec["comparisons"]) * len(models) * len(benches) * 5
    by_key = {(ln["row_comparison"], ln["model"], ln["bench"], ln["column"]): ln for ln in lines}
    some_ci = 0
    for comp in spec["comparisons"]:
        for model in models:
            for bench in benches:
                b = comp.get("b") or strongest(plants, comp["strongest"], model, bench)
                label = f"{comp['a']['label']} − {b['label']}"
                ra = {
                    s: p
                    for s, p in pick_runs(plants, comp["a"], model, bench, 4, False).items()
                    if s in (0, 1, 2)
                }
                rb = {
                    s: p
                    for s, p in pick_runs(plants, b, model, bench, 4, False).items()
                    if s in (0, 1, 2)
                }
                shared_ref = len(rb) == 1 and len(ra) > 1
                deltas = []
                for s in (0, 1, 2):
                    ln = by_key[(label, model, bench, f"Δ pass@4 · seed {s}")]
                    pa, pb = ra.get(s), (next(iter(rb.values())) if shared_ref else rb.get(s))
                    if pa is None or pb is None:
                        assert ln["value"] == "" and ln["notes"]
                        continue
                    d = np.mean([any(o) for o in pa.outcomes]) - np.mean(
                        [any(o) for o in pb.outcomes]
                    )
                    assert _num(ln["value"]) == pytest.approx(d, abs=1e-9)
                    deltas.append(d)
                mean_ln = by_key[(label, model, bench, "Δ pass@4 · mean")]
                ci_ln = by_key[(label, model, bench, "Δ pass@4 · 95% CI")]
                if len(deltas) < 2:
                    assert mean_ln["value"] == "" and ci_ln["ci_low"] == "" and ci_ln["notes"]
                    continue
                d = np.array(deltas)
                half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
                assert _num(mean_ln["value"]) == pytest.approx(d.mean(), abs=1e-9)
                assert _num(ci_ln["ci_low"]) == pytest.approx(d.mean() - half, abs=1e-9)
                assert _num(ci_ln["ci_high"]) == pytest.approx(d.mean() + half, abs=1e-9)
                some_ci += 1
    assert some_ci >= 4  # one comparison (CPPO vs the strongest baseline) per cell


def test_gain_decomposition_adds_up(report):
    plants, tables, _ = report
    spec = shipped_specs()["gain_decomposition"]
    by_key = {
        (ln["row_pipeline"], ln["model"], ln["bench"], ln["metric"]): ln
        for ln in tables["gain_decomposition"]
    }
    full = 0
    for dec in spec["decompositions"]:
        for model in MODELS:
            for bench in ("apps", "lcb"):
                vals = {}
                for part in ("baseline", "iid", "joint"):
                    cell = expected_cell(plants, dec[part], model, bench, "pass", 4, None, False)
                    vals[part] = None if cell is None else cell[0]
                    got = by_key[(dec["label"], model, bench, part)]["value"]
                    assert _num(got) == (None if cell is None else pytest.approx(cell[0]))
                line = {
                    p: by_key[(dec["label"], model, bench, p)]
                    for p in ("total", "plan", "coord", "share")
                }
                if None in vals.values():
                    assert all(ln["value"] == "" for ln in line.values())
                    continue
                total = vals["joint"] - vals["baseline"]
                assert _num(line["total"]["value"]) == pytest.approx(total)
                assert _num(line["plan"]["value"]) == pytest.approx(vals["iid"] - vals["baseline"])
                assert _num(line["coord"]["value"]) == pytest.approx(vals["joint"] - vals["iid"])
                share = _num(line["share"]["value"])
                assert share == (
                    pytest.approx((vals["joint"] - vals["iid"]) / total) if total > 0 else None
                )
                full += 1
    assert full == 8


def test_check_lists_exact_commands_for_missing_runs(report):
    plants, _, root = report
    result = CliRunner().invoke(main, ["report", "--runs", str(root / "runs"), "--check"])
    assert result.exit_code == 1  # cells lack runs
    out = result.output
    runs = str(root / "runs")
    # no codecontests run at all: the command cannot copy a neighbour's settings
    assert (
        f"cppo-bench run --method plan_and_solve --bench codecontests --model org/ModelA "
        f"--k 4 --seeds 0 --runs {runs}\n"
    ) in out
    # the K sweep wants k=8 of untrained CPPO (stored: k=4); a command copies the problems
    # (--limit), backend and sampling of that model's stored apps runs
    assert (
        f"cppo-bench run --method cppo --bench apps --model org/ModelB --k 8 --seeds 0 "
        f"--limit {N} --backend hf --temperature 0.7 --inference joint --runs {runs}\n"
    ) in out
    # a trained row: one command per training seed, with the checkpoint to supply
    assert (
        "cppo-bench run --method skills --bench apps --model '<upskill checkpoint, "
        "training seed 1>' --k 4 --seeds 1 --trained upskill --train-seed 1 "
        f"--base-model org/ModelA --limit {N} --backend hf --temperature 0.7 --runs {runs}\n"
    ) in out
    # cells that have their runs are not listed
    assert "--method direct --bench apps --model org/ModelA --k 4 --seeds 0 " not in out


def test_footnote_says_what_the_inference_only_spread_is(report):
    from cppo_bench.report.cells import SPREAD_NOTE

    _, _, root = report
    text = (root / "out" / "tables" / "main_pass4.md").read_text()
    assert SPREAD_NOTE in text and "bootstrap standard error" in SPREAD_NOTE
