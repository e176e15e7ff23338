"""``sharding.gathered`` leaves FSDP2 as it found it: the all-gathers of a training backward
(counted in two gloo processes, tests/helpers/fsdp_gather_probe.py) are the same before and after a
gathered block (a rollout). The old exit set every unit to reshard after forward, which cleared
the root's lazy "keep unsharded after forward" default: embeddings, final norm and head were
all-gathered again in every later backward (issue 35 item 9: 3 instead of 2 here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests_paths import REPO, torchrun, toy_env

pytestmark = pytest.mark.xdist_group("multiprocess")  # one launch at a time (conftest.py)

torch = pytest.importorskip("torch")


def test_a_gathered_block_leaves_the_backward_all_gathers_unchanged(tmp_path: Path) -> None:
    from train_helpers import tiny_model_dir

    model = tiny_model_dir(tmp_path / "tiny")
    cmd = torchrun()
    cmd += [str(REPO / "tests" / "helpers" / "fsdp_gather_probe.py"), str(tmp_path), str(model)]
    proc = subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for rank in (0, 1):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        # the decoder layers only: the root stays unsharded from forward to backward
        assert got["first"] == got["layers"], got
        assert got["after"] == got["first"] and got["first_rolled"] == got["first"], got
