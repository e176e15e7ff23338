"""The `strategies` task's main table (benchmarks/specs/strategies_main.yaml), from a
run store made by the real `cppo-bench run` of tiny checkpoints, tagged as
`benchmarks/learning.py` tags them, then the real `cppo-bench report` (as a user runs both:
the installed command, no PYTHONPATH).

Each "checkpoint" is a copy of the random base at its own path, sampled with its own seed,
so every seed of a method is a distinct run with distinct outcomes. The oracle is the
records themselves, read as JSON here: pass@4 = share of problems with a passing attempt,
pass@1 = mean share of passing attempts (the unbiased estimate from 4), averaged over seeds.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.fixtures import strategy_task
from cppo_bench.errors import DataError
from cppo_bench.report.specs import parse_spec

pytest.importorskip("torch")

LIMIT = 8
TABLE = "strategies_main"
# row label -> (run method, trained tag or None, training seeds); every method of the table
RUNS = {
    "Untrained base (samples)": ("direct", None, [0]),
    "pass@1 GRPO": ("direct", "pass1", [0]),
    "PKPO": ("direct", "pkpo", [0, 1]),
    "UpSkill": ("skills", "upskill", [0]),
    "CPPO": ("cppo", "cppo", [0]),
}


def _cli(*args: str) -> None:
    exe = Path(sys.executable).with_name("cppo-bench")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("strategies_table")
    base = strategy_task.make_model(root / "base", 0)
    store = root / "store"
    for row, (method, tag, seeds) in enumerate(RUNS.values()):
        for seed in seeds:
            model, sampling = base, 0  # the untrained row's seed: the spec's inference seed
            extra: list[str] = []
            if tag is not None:  # a checkpoint of its own (path), as learning.py evaluates
                model = root / "ckpt" / f"{tag}-s{seed}"
                shutil.copytree(base, model)
                # trained checkpoints differ in content (model_sha256), as each seed's does
                (model / "trained_seed.txt").write_text(f"{tag} {seed}\n")
                extra = ["--trained", tag, "--base-model", str(base), "--train-seed", str(seed)]
                sampling = 1 + seed + 10 * row  # distinct outcomes for every checkpoint
            _cli("run", "--method", method, "--bench", "strategies", "-o", "split=heldout",
                 "--model", str(model), "-k", "4", "--max-tokens", "1", "--temperature", "1",
                 "--top-p", "1", "--seeds", str(sampling), "--limit", str(LIMIT),
                 "--out", str(store), "-b", "device=cpu", "-b", "dtype=float32", *extra)  # fmt: skip
    specs = Path(__file__).resolve().parents[2] / "benchmarks" / "specs"
    _cli("report", "--runs", str(store), "--out", str(root / "report"), "--specs", str(specs))
    return store, root / "report"


def _oracle(store: Path, method: str, tag: str | None) -> dict[str, float]:
    """pass@1 / pass@4 of a row from its runs' records (mean over its runs = its seeds)."""
    p1, p4 = [], []
    for manifest in store.glob(f"strategies/{method}/*/*/manifest.json"):
        if json.loads(manifest.read_text())["extra"].get("trained") != tag:
            continue
        lines = (manifest.parent / "records.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        outcomes = [[b["passed"] for b in r["branches"]] for r in records]
        p4.append(sum(any(o) for o in outcomes) / len(outcomes))
        p1.append(sum(sum(o) / len(o) for o in outcomes) / len(outcomes))
    assert p1, (method, tag)
    return {"pass@1": sum(p1) / len(p1), "pass@4": sum(p4) / len(p4)}


def _cells(report: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (report / "tables" / f"{TABLE}.csv").open(newline="", encoding="utf-8") as fh:
        return {(r["row_method"], r["metric"] + "@" + r["k"]): r for r in csv.DictReader(fh)}


@pytest.mark.slow
def test_one_row_per_method_with_its_seeds_pooled(made: tuple[Path, Path]) -> None:
    store, report = made
    cells = _cells(report)
    for label, (method, tag, seeds) in RUNS.items():
        want = _oracle(store, method, tag)
        for name, metric in (("pass@1", "pass@1"), ("pass@4", "pass@4")):
            cell = cells[(label, metric)]
            assert int(cell["n_seeds"]) == len(seeds) and int(cell["n_problems"]) == LIMIT
            assert float(cell["value"]) == pytest.approx(want[name]), (label, name)
            low, high = float(cell["ci_low"]), float(cell["ci_high"])
            assert low <= float(cell["value"]) <= high, (label, name)
            # the seeds' checkpoints differ by design (their served model and their
            # content): no "runs differ" warning for that
            assert "differ in" not in cell["notes"], cell["notes"]
    # the Markdown the script prints: one line per method, never one per checkpoint folder
    md = (report / "tables" / f"{TABLE}.md").read_text(encoding="utf-8")
    body = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(body) == 1 + len(RUNS), md
    for line, label in zip(body[1:], RUNS, strict=True):
        assert line.startswith((f"| {label} |", f"| {label} (")), (line, label)
    assert "ckpt" not in md and "pass@1" in body[0] and "pass@4" in body[0]
    assert (report / "figures" / f"{TABLE}_bars.png").is_file()
    assert (report / "figures" / f"{TABLE}_curves.png").is_file()


@pytest.mark.slow
def test_each_tier_is_tested_against_the_strongest_row_below_it(made: tuple[Path, Path]) -> None:
    store, report = made
    cells = _cells(report)
    means = {label: _oracle(store, m, t)["pass@4"] for label, (m, t, _) in RUNS.items()}
    below_passk = ["Untrained base (samples)", "pass@1 GRPO"]
    best = {
        "PKPO": max(below_passk, key=lambda x: means[x]),
        "UpSkill": max(below_passk, key=lambda x: means[x]),
        "CPPO": max((x for x in RUNS if x != "CPPO"), key=lambda x: means[x]),
    }
    for label, baseline in best.items():
        cell = cells[(label, "pass@4")]
        p = float(cell["p_value"])
        assert 0 < p <= 1
        assert (
            f"p = {p:.3f} that it beats the strongest baseline of the cell, {baseline}"
            in (cell["notes"])
        )
        assert ("†" in cell["mark"]) == (p < 0.05)
    for label in below_passk:  # baselines are not tested
        assert cells[(label, "pass@4")]["p_value"] == ""


@pytest.mark.slow
def test_the_cppo_row_carries_its_plan_validity(made: tuple[Path, Path]) -> None:
    store, report = made
    cells = _cells(report)
    (manifest,) = store.glob("strategies/cppo/*/*/manifest.json")
    validity = json.loads(manifest.read_text())["extra"]["summary"]["validity"]
    cell = cells[("CPPO", "valid@4")]
    assert float(cell["value"]) == pytest.approx(validity["valid"] / validity["tuples"])
    assert cells[("PKPO", "valid@4")]["value"] == ""  # no plans: no validity


@pytest.mark.parametrize(
    ("significance", "interval", "says"),
    [
        ({"candidates": ["a", "a"]}, None, "listed twice"),
        ({"candidates": []}, None, "a group name or a list"),
        ({"candidates": [1]}, None, "a group name or a list"),
        (None, 1.5, "a confidence between 0 and 1"),
        (None, 0, "a confidence between 0 and 1"),
        (None, float("nan"), "finite"),
        (None, True, "expected float"),
        ({"p_values": "yes"}, None, "expected bool"),
    ],
)
def test_bad_significance_groups_or_interval_name_the_file(
    significance: dict | None, interval: object, says: str
) -> None:
    data: dict = {"name": "t", "title": "T"}
    if significance is not None:
        data["significance"] = significance
    if interval is not None:
        data["interval"] = interval
    with pytest.raises(DataError, match=says) as err:
        parse_spec("specs/t.yaml", data)
    assert str(err.value).startswith("specs/t.yaml: ")


def test_a_tier_is_never_tested_against_a_higher_tier(tmp_path: Path) -> None:
    """Planted pass@4 0.25 < 0.5 < 0.75 < 1.0 for the base, pass@1, PKPO and CPPO: PKPO is
    tested against pass@1 GRPO (the strongest row below its tier), never against CPPO, the
    strongest row of the cell; CPPO against PKPO, the strongest of every other row."""
    from report_plant import N, Plant, _write

    from cppo_bench.report.build import compute

    runs = tmp_path / "runs"
    planted = {None: 0.25, "pass1": 0.5, "pkpo": 0.75, "cppo": 1.0}
    for tag, rate in planted.items():
        solved = round(rate * N)
        outcomes = [[i < solved] + [False] * 3 for i in range(N)]
        method = "cppo" if tag == "cppo" else "direct"
        for seed in [0] if tag is None else [0, 1, 2]:
            _write(runs, Plant(method, "org/ModelA", "strategies", seed, outcomes,
                               trained=tag, planner=[0] * N, solver=[0] * N))  # fmt: skip
    specs = Path(__file__).resolve().parents[2] / "benchmarks" / "specs"
    table = next(t for t in compute(runs, specs_dir=specs).tables if t.name == TABLE)
    j = next(j for j, c in enumerate(table.columns) if c.header[-1] == "pass@4")
    cells = {row.labels[0]: row.cells[j] for row in table.rows}
    beaten = {
        label: next(n for n in cells[label].notes if "strongest baseline" in n)
        for label in ("PKPO", "CPPO")
    }
    assert beaten["PKPO"].endswith("the cell, pass@1 GRPO (hierarchical bootstrap)")
    assert beaten["CPPO"].endswith("the cell, PKPO (hierarchical bootstrap)")
    assert cells["pass@1 GRPO"].p_value is None  # a baseline is not tested


@pytest.mark.parametrize(
    ("metric", "says"),
    [
        (
            {"metric": "pass", "digits": 100_000_000},
            "columns.metrics[0].digits: 100000000 is outside 0..12",
        ),
        ({"metric": "pass", "digits": -1}, "digits: -1 is outside"),
        (
            {"metric": "pass", "k": 100_000_000},
            "columns.metrics[0].k: 100000000 is outside 1..65536",
        ),
        ({"metric": "pass", "k": 0}, "k: 0 is outside"),
    ],
)
def test_a_metrics_sizes_are_bounded_at_the_door(metric: dict, says: str) -> None:
    # digits 100000000 printed 100 MB a cell; a spec comes from a stranger
    with pytest.raises(DataError, match=re.escape(says)) as err:
        parse_spec("specs/t.yaml", {"name": "t", "title": "T", "columns": {"metrics": [metric]}})
    assert str(err.value).startswith("specs/t.yaml: ")
