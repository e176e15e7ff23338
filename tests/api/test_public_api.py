"""The public Python API (issue 28): only the names `cppo_bench` exports, the demo end to end
(load -> verify -> run -> load_runs -> stats), and the same pass@K as `cppo-bench stats`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from run_scripted import ScriptedBackend
from tests_paths import toy_env

import cppo_bench as cb
from cppo_bench.cli import main


def test_public_names_and_a_light_import():
    assert set(cb.__all__) >= {"load_benchmark", "verify", "run", "load_runs", "stats"}
    for name in cb.__all__:
        assert getattr(cb, name) is not None
    code = (
        "import sys, cppo_bench, trainers\n"
        "heavy = [m for m in ('torch', 'transformers', 'pandas', 'vllm') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=toy_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
    # the harness never imports the trainers; `train` is theirs
    assert not hasattr(cb, "train")
    from trainers import train
    from trainers.api import train as front_door

    assert train is front_door


def test_demo_end_to_end(tmp_path):
    problems = cb.load_benchmark("demo", difficulty="easy")
    assert len(problems) == 8 and all(isinstance(p, cb.Problem) for p in problems)
    two = problems[:2]
    verdicts = cb.verify(two, [two[0].reference_solutions[0], "print('wrong')"], time_s=5)
    assert [v.verdict for v in verdicts][0] == "AC" and verdicts[1].passed is False
    with pytest.raises(cb.DataError, match="2 problems but 1 programs"):
        cb.verify(two, ["x"])
    with pytest.raises(cb.DataError, match="unknown limit"):
        cb.verify(two[:1], ["x"], seconds=3)

    # a scripted backend: the reference on even request seeds, a wrong program on odd ones
    backend = ScriptedBackend(cb.load_benchmark("demo"))
    run = cb.run("direct", "demo", backend=backend, k=4, seeds=[0, 1], limit=3, out=tmp_path)
    assert isinstance(run, cb.Run) and len(run.run_dirs) == 2
    frame = cb.load_runs(tmp_path)
    assert len(frame) == 6  # 3 problems x 2 seeds
    assert set(frame["seed"]) == {0, 1} and set(frame["method"]) == {"direct"}
    assert frame["outcomes"].str.fullmatch("[01]{4}").all()
    # the frame agrees with the records: n_passed counts the branches verified AC
    for run_dir in run.run_dirs:
        for line in (run_dir / "records.jsonl").read_text().splitlines():
            rec = json.loads(line)
            row = frame[
                (frame["run_dir"] == str(run_dir)) & (frame["problem_id"] == rec["problem_id"])
            ]
            assert int(row["n_passed"].iloc[0]) == sum(b["passed"] for b in rec["branches"])
    # pass@1 by hand: direct's samples are exchangeable, so the unbiased estimator, c/n per
    # problem; averaged over seeds then problems
    table = cb.stats.pass_at_k(frame, k=[1, 4])
    got = table.set_index("k")["mean"]
    unbiased = (frame["n_passed"] / frame["n_branches"]).groupby(frame["problem_id"]).mean()
    assert got[1] == pytest.approx(unbiased.mean())
    assert set(table["estimator"]) == {"unbiased"}
    first = cb.stats.pass_at_k(frame, k=1, estimator="first")["mean"].iloc[0]
    by_hand = frame["outcomes"].str[0].eq("1").groupby(frame["problem_id"]).mean().mean()
    assert first == pytest.approx(by_hand)
    anyp = frame["outcomes"].str.contains("1").groupby(frame["problem_id"]).mean().mean()
    assert got[4] == pytest.approx(anyp)
    assert set(table["problems"]) == {3} and set(table["seeds"]) == {2}


def test_load_runs_gives_the_cli_pass_at_k(tmp_path):
    backend = ScriptedBackend(cb.load_benchmark("demo"))
    cb.run("direct", "demo", backend=backend, k=4, seeds=[0, 1, 2], limit=4, out=tmp_path)
    cb.run("cppo", "demo", backend=backend, k=4, seeds=[0], limit=4, out=tmp_path)
    args = ["stats", "passk", "--runs", str(tmp_path), "--k", "1,4", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    cli = {(c["method"], c["k"]): c for c in json.loads(result.stdout[result.stdout.index("[") :])}
    api = cb.stats.pass_at_k(cb.load_runs(tmp_path), k=[1, 4])
    assert len(api) == len(cli) == 4
    for row in api.to_dict("records"):
        c = cli[(row["method"], row["k"])]
        assert row["mean"] == c["mean"] and row["spread"] == c["spread"]
        assert row["spread_kind"] == c["spread_kind"] and row["problems"] == c["problems"]


def test_frame_input_errors_are_one_line(tmp_path):
    with pytest.raises(cb.DataError, match="no run directories"):
        cb.load_runs(tmp_path)
    import pandas as pd

    with pytest.raises(cb.DataError, match="missing column"):
        cb.stats.pass_at_k(pd.DataFrame({"method": ["a"]}), k=1)


def test_outcome_csv_read_by_pandas_names_bad_input(tmp_path):
    from cppo_bench.store.frames import read_outcomes

    path = tmp_path / "r.csv"
    path.write_text("method,problem_id,outcomes\ncppo,p1,01\ncppo,p2,01,extra\n")
    with pytest.raises(cb.DataError, match=r"r\.csv: not a readable CSV \(.*line 3"):
        read_outcomes(path)
    path.write_text("method,problem_id,outcomes,seed\ncppo,p1,0110,0\ncppo,p1,1000,1\nb,p1,1,0\n")
    frame = read_outcomes(path)
    # no `trained` column: nothing is trained (seeds are sampling seeds), and a method with
    # several seeds is named so a trained one can be tagged (schema in table.py)
    assert frame["trained"].isna().all()
    (warning,) = frame.attrs["warnings"]
    assert warning.startswith("cppo (-): 2 seeds and no `trained` column")
    assert frame["outcomes"].tolist() == ["0110", "1000", "1"]
    path.write_bytes(b"")
    with pytest.raises(cb.DataError, match="missing column"):
        read_outcomes(path)
