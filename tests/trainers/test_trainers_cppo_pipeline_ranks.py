"""The joint CPPO stage in two gloo processes (torchrun, CPU): the RM refresh between phases
runs once, on the main process, from every process's tuples, and every process then holds the
same gate. Each process used to refresh from its own tuples (a different gate per process)
while all of them deleted and rewrote the same folder, recent_tuples.json and refresh.jsonl
(issue 35 item 5)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests_paths import REPO, torchrun, toy_env

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_both_processes_hold_the_same_gate_after_a_refresh(tmp_path: Path) -> None:
    from tests.helpers.cppo_stage_fixture import prepared

    prepared(tmp_path)  # sft, rm, warmup and audit complete on the tiny model
    cmd = torchrun()
    cmd += [str(REPO / "tests" / "helpers" / "cppo_joint_probe.py"), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    gates = [json.loads((tmp_path / f"gates{r}.json").read_text()) for r in (0, 1)]
    assert len(gates[0]) == 2  # stage 2's gate, then the refreshed one
    assert gates[0] == gates[1]
    assert gates[0][0] != gates[0][1]  # the refresh really changed the gate
    joint = tmp_path / "pipe" / "joint"
    records = [json.loads(x) for x in (joint / "refresh.jsonl").read_text().splitlines()]
    assert [(r["step"], r["accepted"]) for r in records] == [(2, True)]
    recent = json.loads((joint / "recent_tuples.json").read_text())
    # every process's tuples of the last step: 2 prompts (1 a process) x M = 2
    assert recent["step"] == 4 and len(recent["tuples"]) == 4
