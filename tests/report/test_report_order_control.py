"""The order-randomized control (issue 45 item 2): its first-K, last-K and random-K rows are
each computed by the function `stats passk` scores with, or are empty with the reason; never
one row's numbers under another's label."""

from __future__ import annotations

import pytest

N = 24  # report_plant.N: problems per planted run


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from report_plant import Plant, _write

    root = tmp_path_factory.mktemp("order") / "runs"
    joint = {"inference": "joint"}
    # K = 4 on APPS: only the first branch of each tuple passes, so first-1 is 1, last-1 is 0
    # and random-1 is the share of problems whose random pick is the first branch
    four = [[True, False, False, False] for _ in range(N)]
    _write(root, Plant("cppo", "org/ModelA", "apps", 0, four, options=joint,
                       planner=[0] * N, solver=[0] * N))  # fmt: skip
    # K = 2 on LiveCodeBench: a 4-tuple's last or random K cannot be read off two branches
    two = [[i % 2 == 0, True] for i in range(N)]
    _write(root, Plant("cppo", "org/ModelA", "lcb", 0, two, k=2, options=joint,
                       planner=[0] * N, solver=[0] * N))  # fmt: skip
    return root


def _cells(root):
    from cppo_bench.report.cells import CellEngine
    from cppo_bench.report.run_index import RunIndex
    from cppo_bench.report.specs import load_specs
    from cppo_bench.report.tables import build_table

    spec = next(s for s in load_specs() if s.name == "order_control")
    table = build_table(spec, CellEngine(RunIndex(root), resamples=50))
    out = {}
    for row, col, cell in table.cells():
        if "untrained" in row.labels[0]:
            out[(row.labels[0].rsplit(", ", 1)[1], col.meta["bench"], col.meta["k"])] = cell
    return out


def test_last_and_random_rows_differ_from_first_on_four_tuples(store):
    import cppo_bench as cb

    cells = _cells(store)
    first, last, rand = (cells[(s, "apps", 1)] for s in ("first-K", "last-K", "random-K"))
    assert first.value == pytest.approx(1.0) and last.value == pytest.approx(0.0)
    assert 0.0 < rand.value < 1.0
    # each is the number `stats passk --select ...` gives for the same runs
    frame = cb.load_runs(store)
    frame = frame[frame["benchmark"] == "apps"]
    for select, cell in (("first", first), ("last", last), ("random", rand)):
        table = cb.stats.pass_at_k(frame, k=[1], select=select)
        assert table["mean"].iloc[0] == pytest.approx(cell.value)


def test_a_selection_the_runs_cannot_give_is_empty_with_the_reason(store):
    import cppo_bench as cb
    from cppo_bench.errors import DataError

    cells = _cells(store)
    for k in (1, 2):
        assert cells[("first-K", "lcb", k)].value is not None
        for select in ("last-K", "random-K"):
            cell = cells[(select, "lcb", k)]
            assert cell.value is None, (select, k)
            assert any("not computed" in n and "k=2" in n for n in cell.notes), cell.notes
    # `stats` refuses the same request: the report agrees with it, not with first-K
    frame = cb.load_runs(store)
    with pytest.raises(DataError, match="needs 4"):
        cb.stats.pass_at_k(frame[frame["benchmark"] == "lcb"], k=[1], select="last")
