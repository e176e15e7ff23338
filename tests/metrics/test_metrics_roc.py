"""ROC AUC in the harness (numpy only): the report's gate figure uses it without importing
the trainers package or torch (trainers import the harness, never the reverse)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cppo_bench.metrics import roc_auc


def test_auc_is_the_share_of_correctly_ordered_pairs_with_ties_halved():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 5, 40) / 4  # many ties
    labels = rng.integers(0, 2, 40)
    pairs = [1.0 if p > n else 0.5 if p == n else 0.0
             for p in scores[labels == 1] for n in scores[labels == 0]]  # fmt: skip
    assert roc_auc(scores, labels) == pytest.approx(sum(pairs) / len(pairs))
    with pytest.raises(ValueError, match="both"):
        roc_auc([0.1, 0.2], [1, 1])


def test_gate_figure_imports_neither_trainers_nor_torch(tmp_path):
    code = f"""
import sys
from pathlib import Path
from cppo_bench.report.figures import gate_diagnostics
from cppo_bench.store.training_schema import GateLog, GateRecord
records = [GateRecord(gate_prob=p, label=l, passed=bool(l))
           for p, l in [(0.9, 1), (0.8, 1), (0.3, 0), (0.6, 0), (0.2, 0)]]
gate_diagnostics(GateLog("g", Path("g.jsonl"), records), Path({str(tmp_path)!r}))
print(sorted(m for m in ("torch", "trainers") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
