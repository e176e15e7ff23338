"""One uncertainty rule everywhere (issue 45 items 3 and 7): `run --seeds` closes with the ±
`stats passk` prints for the same runs; a CSV's seeds are not training seeds unless tagged;
the k a command defaults to is one the runs allow, the others named."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from run_scripted import WRONG, ScriptedBackend, invoke

from cppo_bench.benchmarks import load_benchmark
from cppo_bench.cli import main


@pytest.fixture(scope="module")
def demo():
    return load_benchmark("demo").problems


def _rare(demo) -> ScriptedBackend:
    backend = ScriptedBackend(demo)

    def reply(req):  # right on about one branch in three: a spread that is not 0
        return backend.default_reply(req) if req.params.seed % 3 == 0 else WRONG

    backend.respond = reply
    return backend


def test_run_seeds_summary_is_the_stats_number(tmp_path, demo):
    args = ["run", "--method", "direct", "--bench", "demo", "--limit", "6", "--seeds", "0,1",
            "--k", "2", "--out", str(tmp_path)]  # fmt: skip
    res = invoke(args, _rare(demo))
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if "over seeds" in x)
    st = CliRunner().invoke(main, ["stats", "passk", "--runs", str(tmp_path), "--json"])
    cells = {c["k"]: c for c in json.loads(st.stdout)}
    cell = cells[2]
    assert cell["spread_kind"] == "bootstrap_se"  # sampling seeds of an untrained model
    assert f"{cell['mean']:.3f} ± {cell['spread']:.3f} (bootstrap SE" in line, line
    assert "sd over" not in line and "2 seeds" in line


def _csv(tmp_path, tagged: bool):
    rng = np.random.default_rng(3)
    head = "benchmark,method,seed,problem_id,outcomes" + (",trained" if tagged else "")
    lines, means = [head], []
    for s in range(3):
        mat = rng.random((40, 2)) < 0.4
        means.append(mat.any(axis=1).mean())
        for i, row in enumerate(mat):
            bits = "".join("1" if x else "0" for x in row)
            lines.append(f"demo,direct,{s},p{i},{bits}" + (",pkpo" if tagged else ""))
    path = tmp_path / ("tagged.csv" if tagged else "plain.csv")
    path.write_text("\n".join(lines) + "\n")
    return path, means


def test_a_csv_of_direct_with_three_seeds_is_not_a_trained_method(tmp_path):
    path, _ = _csv(tmp_path, tagged=False)
    res = CliRunner().invoke(main, ["stats", "passk", "--csv", str(path), "--k", "2", "--json"])
    assert res.exit_code == 0, res.output
    (cell,) = json.loads(res.stdout)
    assert cell["spread_kind"] == "bootstrap_se" and cell["seeds"] == 3
    assert "direct (demo): 3 seeds and no `trained` column" in res.stderr
    # tagged, the same seeds are a checkpoint's training seeds: std over them
    tagged, means = _csv(tmp_path, tagged=True)
    res = CliRunner().invoke(main, ["stats", "passk", "--csv", str(tagged), "--k", "2", "--json"])
    (cell,) = json.loads(res.stdout)
    assert cell["spread_kind"] == "seed_std"
    assert cell["spread"] == pytest.approx(np.std(means, ddof=1))


def test_stats_defaults_take_the_k_the_runs_allow(tmp_path):
    import cppo_bench as cb

    path, _ = _csv(tmp_path, tagged=False)  # K = 2 branches per problem
    res = CliRunner().invoke(main, ["stats", "passk", "--csv", str(path)])
    assert res.exit_code == 0, res.output
    assert "pass@1" in res.stdout and "pass@2" in res.stdout and "pass@4" not in res.stdout
    assert "pass@4 left out" in res.stderr and "2 branches" in res.stderr
    frame = cb.store.frames.read_outcomes(path)
    table = cb.stats.pass_at_k(frame)
    assert sorted(set(table["k"])) == [1, 2]
    assert table.attrs["left_out"][0].startswith("pass@4 left out")
    # a second method to compare: the bootstrap's default k is the largest the runs give
    other = path.read_text().replace(",direct,", ",plan_and_solve,").splitlines()[1:]
    path.write_text(path.read_text() + "\n".join(other) + "\n")
    res = CliRunner().invoke(main, ["stats", "bootstrap", "--csv", str(path), "--a", "direct",
                                    "--resamples", "50", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "pass@3 left out" in res.stderr and "pass@4 left out" in res.stderr
    (row,) = json.loads(res.stdout)
    assert row["score"] == pytest.approx(cb.stats.pass_at_k(frame, k=2)["mean"].iloc[0])
    # an explicit k the runs cannot give still stops, with the same one line
    res = CliRunner().invoke(main, ["stats", "passk", "--csv", str(path), "--k", "4"])
    assert res.exit_code != 0 and "pass@4 needs 4" in res.output
