"""LiveCodeBench's own analysis: pass@K by difficulty and over a contest-date window, in
`stats` and the API, with the loader's --release / --start-date / --end-date flags. The
oracle reads difficulty and contest_date straight from the LiveCodeBench JSONL, not through
the loader or the run store."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import pytest
from run_scripted import ScriptedBackend, invoke

import cppo_bench as cb
from cppo_bench.store.runs import RECORDS, iter_runs

# ../shared/data beside the checkout (tests/conftest.py's SHARED_DATA: not imported from there,
# as two conftest.py modules clash by name when one pytest process collects both)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LCB = SHARED_DATA / "livecodebench" / "code_generation_release_v1_public.jsonl"
N = 12
pytestmark = pytest.mark.skipif(not LCB.exists(), reason=f"{LCB} missing")


def raw_rows() -> dict[str, dict]:
    rows = [json.loads(line) for line in LCB.read_text(encoding="utf-8").splitlines()]
    return {str(r["question_id"]): r for r in rows}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A direct run of the first N problems, K=1, with known pass/fail per problem (written
    into the stored records: the scripted model solves nothing)."""
    out = tmp_path_factory.mktemp("lcb")
    cb.run("direct", "livecodebench", data=LCB, backend=ScriptedBackend(), k=1, limit=N, out=out)
    (run_dir,) = iter_runs(out)
    path = run_dir / RECORDS
    records = [json.loads(line) for line in path.read_text().splitlines()]
    rng = random.Random(3)
    solved = {}
    for rec in records:
        solved[rec["problem_id"]] = ok = rng.random() < 0.5
        rec["branches"][0].update(passed=ok, verdict="AC" if ok else "WA")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out, solved


def oracle(solved: dict[str, bool], keep) -> dict[str, float]:
    raw = raw_rows()
    groups = defaultdict(list)
    for pid, ok in solved.items():
        r = next(v for k, v in raw.items() if pid.endswith(k))
        if keep(r):
            groups[r["difficulty"]].append(ok)
    return {d: sum(v) / len(v) for d, v in groups.items()}


def test_records_keep_difficulty_and_contest_date(store):
    out, _ = store
    frame = cb.load_runs(out)
    raw = raw_rows()
    for _, row in frame.iterrows():
        r = next(v for k, v in raw.items() if row["problem_id"].endswith(k))
        assert row["difficulty"] == r["difficulty"]
        assert row["contest_date"] == r["contest_date"][:10]
        assert row["platform"] == r["platform"]


def test_pass_at_1_by_difficulty_matches_the_raw_file(store):
    out, solved = store
    table = cb.stats.pass_at_k_by(cb.load_runs(out), "difficulty", k=1)
    got = dict(zip(table["difficulty"], table["mean"], strict=True))
    assert got == pytest.approx(oracle(solved, lambda r: True))
    assert not table["partial"].any()  # a group is never 'partial' against the benchmark


def test_a_contest_date_window_keeps_only_problems_released_in_it(store):
    out, solved = store
    start, end = "2023-09-01", "2023-12-31"
    frame = cb.stats.window(cb.load_runs(out), start_date=start, end_date=end)
    keep = lambda r: start <= r["contest_date"][:10] <= end  # noqa: E731
    assert len(frame) == sum(keep(r) for pid, r in raw_rows().items()
                             if any(p.endswith(pid) for p in solved))  # fmt: skip
    assert 0 < len(frame) < N
    table = cb.stats.pass_at_k_by(frame, "difficulty", k=1)
    assert dict(zip(table["difficulty"], table["mean"], strict=True)) == pytest.approx(
        oracle(solved, keep)
    )
    with pytest.raises(cb.DataError, match="expected an ISO date"):
        cb.stats.window(frame, start_date="last year")


def test_stats_cli_by_difficulty_and_window(store):
    out, solved = store
    result = invoke(["stats", "passk", "--runs", str(out), "--k", "1", "--by", "difficulty",
                     "--start_date", "2023-09-01", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    cells = json.loads(result.stdout)
    keep = lambda r: r["contest_date"][:10] >= "2023-09-01"  # noqa: E731
    assert {c["difficulty"]: c["mean"] for c in cells} == pytest.approx(oracle(solved, keep))
    # the window holds part of the file's problems: every --by row keeps the partial marker
    shown, total = sum(c["problems"] for c in cells), len(raw_rows())
    assert {c["run_partial"] for c in cells} == {f"partial: n={shown}/{total} of the benchmark"}
    text = invoke(["stats", "passk", "--runs", str(out), "--k", "1", "--by", "difficulty"])
    assert text.stdout.count("partial: n=") == len(cells)
    empty = invoke(["stats", "passk", "--runs", str(out), "--start-date", "2030-01-01"])
    assert empty.exit_code == 1 and "no results in the window" in empty.output


def test_loader_flags_follow_livecodebench(tmp_path):
    shown = invoke(["data", "show", "--bench", "livecodebench", "--data", str(LCB),
                    "--start-date", "2024-01-01", "--json"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    expected = sum(r["contest_date"][:10] >= "2024-01-01" for r in raw_rows().values())
    assert f"kept {expected}" in shown.output
    late = invoke(["data", "show", "--bench", "lcb", "--data", str(LCB), "--release", "v2"])
    assert late.exit_code == 1  # v2's window holds none of release_v1's problems


def test_report_tables_by_difficulty_match_the_raw_file(store):
    from cppo_bench.report.slice_tables import slice_tables

    out, solved = store
    tables = {t.name: t for t in slice_tables(out, k=1, resamples=50)}
    by_difficulty = tables["lcb_by_difficulty"]
    groups = [c.header[0] for c in by_difficulty.columns]
    (row,) = by_difficulty.rows
    got = {g: c.value for g, c in zip(groups, row.cells, strict=True)}
    assert got == pytest.approx(oracle(solved, lambda r: True))
    assert "lcb_by_window" in tables
